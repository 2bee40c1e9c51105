#!/usr/bin/python3
"""A stand-in for `loom run --listen` that drops its clients: for each of CONNECTIONS connections it
sends a hello and a few records, then (without an end message) closes — a lost connection — and
after the last one it sends an end message. Prints the port it listens on, then serves.
Usage: fake_stream_server.py CONNECTIONS"""
import json
import socket
import sys
import time

connections = int(sys.argv[1])
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", 0))
server.listen()
print(server.getsockname()[1], flush=True)
for n in range(connections):
    client, _ = server.accept()
    lines = [{"type": "hello", "protocol": 1, "run": "fake", "step": 0, "total_steps": 100, "world_size": 1}]
    lines += [{"type": "train", "step": s, "loss": 5.0 - 0.01 * s, "loss_scale": 1024, "lr": 1e-3,
               "grad_norm": 1.0, "sequences_per_second": 100, "tokens_per_second": 6400, "step_ms": 10}
              for s in range(1, 21)]
    if n == connections - 1:
        lines.append({"type": "end", "step": 20, "stopped_early": True, "checkpoint": "none"})
    client.sendall("".join(json.dumps(line) + "\n" for line in lines).encode())
    time.sleep(1.5)
    client.close()
