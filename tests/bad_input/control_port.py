#!/usr/bin/python3
"""The metrics/control port of a real `loom run` (GLUE fixtures, no download), spoken to over TCP:
- mistyped client messages (a stop with "id": "notnum", a negative or fractional id, a key control
  messages do not have, a command that is no string, an unknown type, a line that is not a JSON
  object) are each answered with an error line naming the problem and never acted on: the run
  goes on, and a mistyped checkpoint-now writes no checkpoint;
- a run paused by a client that then disconnects resumes (the client still attached gets the
  resume's ack with its reason, the run's log says so), and still stops cleanly on request;
- tokens: beyond loopback a recipe without a token is refused before the run (exit 2 naming the
  file and the key), a wrong or absent token gets an error line and the connection closes, each
  refusal is logged and counted, and the right token steers the run.

Usage: control_port.py LOOM SOURCE_DIR
"""
import json
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "e2e"))
from metrics_stream_test import FAILURES, Client, Run, check, run_token  # noqa: E402  (the stream client)

CASES = 0


def case(condition, message):
    global CASES
    CASES += 1
    return check(condition, message)


def write_recipe(src, work, name, metrics_table):
    """A tiny MRPC classifier on the GLUE fixtures: about a millisecond a step, so it runs until stopped."""
    glue = src / "tests/fixtures/glue"
    recipe = work / f"{name}.toml"
    recipe.write_text(f"""[run]
name = "{name}"
output_dir = "{work}/runs"

[backend]
component = "cpu"
threads = 1

[tokenizer]
component = "wordpiece"
vocab = "{glue}/vocab.txt"

[data]
component = "text-classification"
task = "mrpc"
file = "{glue}/mrpc/train.tsv"
max_seq_length = 32
batch_size = 8

[model]
config = "{glue}/tiny-bert.json"
blocks = ["bert.embeddings", {{ block = "bert.encoder-layer", repeat = "num_hidden_layers" }}, "bert.classifier-head"]

[optimizer]
component = "adamw"
lr = 1e-4

[schedule]
component = "constant"

[train]
steps = 100000000
log_every = 20

[checkpoint]
every = 0

{metrics_table}
""")
    return recipe


def drain(client, seconds):
    """Every message that arrives within `seconds`."""
    seen = []
    try:
        client.until(lambda m: False, timeout=seconds, seen=seen)
    except (TimeoutError, OSError):
        pass
    return seen


def send_raw(client, text):
    client.socket.sendall(text.encode())


def mistyped_messages(loom, src, work):
    run = Run(loom, write_recipe(src, work, "steered", '[metrics]\nlisten = "127.0.0.1:0"'))
    host, port = run.endpoint()
    token = run_token(work / "runs/steered")
    pauser = Client(host, port, token=token)
    check(pauser.next()["type"] == "hello", "the pausing client is admitted")
    first = pauser.until(lambda m: m["type"] == "train")

    # Each mistyped message: an error naming the problem, never acted on.
    bad_lines = [
        ({"type": "control", "command": "stop", "id": "notnum"}, '"id" must be a non-negative integer'),
        ({"type": "control", "command": "stop", "id": -3}, '"id" must be a non-negative integer'),
        ({"type": "control", "command": "stop", "id": 1.5}, '"id" must be a non-negative integer'),
        ({"type": "control", "command": "checkpoint-now", "id": "x"}, '"id" must be a non-negative integer'),
        ({"type": "control", "command": "pause", "id": 1, "force": True}, 'unknown key "force"'),
        ({"type": "control", "command": True}, "one of pause, resume, checkpoint-now, stop"),
        ({"type": "control", "command": "halt"}, "one of pause, resume, checkpoint-now, stop"),
        ({"type": "shutdown"}, "unknown message type"),
        ({"command": "stop"}, 'has no "type"'),
    ]
    for bad, reason in bad_lines:
        pauser.send(bad)
        answer = pauser.until(lambda m: m["type"] in ("error", "ack", "end"))
        case(answer["type"] == "error" and reason in answer.get("message", ""),
             f"{json.dumps(bad)} is refused with an error naming the problem: {answer}")
    for raw in ["stop\n", "[1, 2]\n", '{"type": "control", "command": "stop"\n']:
        send_raw(pauser, raw)
        answer = pauser.until(lambda m: m["type"] in ("error", "ack", "end"))
        case(answer["type"] == "error" and "expected one JSON object per line" in answer.get("message", ""),
             f"{raw.strip()!r} is refused as no JSON object: {answer}")
    later = pauser.until(lambda m: m["type"] in ("train", "end") and m["step"] >= first["step"] + 100)
    case(later["type"] == "train", f"the run went on after the mistyped messages: {later}")
    checkpoints = work / "runs/steered/checkpoints"
    case(not checkpoints.exists() or not any(checkpoints.iterdir()),
         f"a mistyped checkpoint-now wrote a checkpoint: {list(checkpoints.iterdir()) if checkpoints.exists() else []}")

    # A pause left behind by a client that disconnects ends with it.
    watcher = Client(host, port, token=token)
    check(watcher.next()["type"] == "hello", "the watching client is admitted")
    pauser.send({"type": "control", "command": "pause", "id": 7})
    paused = pauser.until(lambda m: m["type"] == "ack")
    check(paused["command"] == "pause" and paused["id"] == 7, f"the pause is acknowledged: {paused}")
    seen = [m for m in drain(watcher, 0.5) if m["type"] == "train"]  # the history and records up to the pause
    steps_before = max([m["step"] for m in seen], default=0)
    time.sleep(1.0)
    late = [m for m in drain(watcher, 0.5) if m["type"] == "train" and m["step"] > paused["step"]]
    check(not late and steps_before <= paused["step"], f"paused at step {paused['step']}: no record after it: {late[:2]}")
    pauser.socket.close()
    resumed = watcher.until(lambda m: m["type"] == "ack", timeout=30)
    case(resumed["command"] == "resume" and resumed["id"] is None and resumed["step"] == paused["step"]
         and "went away" in resumed.get("reason", ""),
         f"the client still attached is told the run resumed, and why: {resumed}")
    goes_on = watcher.until(lambda m: m["type"] in ("train", "end") and m["step"] > paused["step"] + 40, timeout=60)
    case(goes_on["type"] == "train", f"training goes on after the pausing client left: {goes_on}")
    case(any(f"paused the run and went away; resumed at step {paused['step']}" in line for line in run.log),
         "the run's log says why it resumed:\n" + "".join(run.log[-5:]))

    watcher.send({"type": "control", "command": "stop", "id": 8})
    stop = watcher.until(lambda m: m["type"] == "ack" and m["command"] == "stop", timeout=60)
    watcher.until(lambda m: m["type"] == "end", timeout=60)
    code = run.wait()
    case(code == 0 and stop["id"] == 8, f"a stop still stops the run with exit 0 (got {code}): {stop}")


def tokens(loom, src, work):
    # Beyond loopback a token is required: refused before training, naming the file and the key.
    open_recipe = write_recipe(src, work, "open", '[metrics]\nlisten = "0.0.0.0:7070"')
    refused = subprocess.run([loom, "check", str(open_recipe)], capture_output=True, text=True)
    case(refused.returncode == 2 and "[metrics] token" in refused.stderr and "open.toml:" in refused.stderr,
         f"non-loopback without a token: loom check exits 2 naming file and key: {refused.returncode} "
         f"{refused.stderr[-300:]}")
    flag = subprocess.run([loom, "run", str(open_recipe), "--listen", "0.0.0.0:0"], capture_output=True, text=True)
    case(flag.returncode == 2 and "[metrics] token" in flag.stderr, f"--listen 0.0.0.0:0 without a token: {flag.stderr[-300:]}")
    case(not (work / "runs/open").exists(), "a run refused for its token made its run directory")

    run = Run(loom, write_recipe(src, work, "guarded", '[metrics]\nlisten = "0.0.0.0:0"\ntoken = "s3cret"'))
    _, port = run.endpoint()
    wrong = Client("127.0.0.1", port)
    wrong.send({"type": "auth", "token": "guess"})
    answer = wrong.next()
    case(answer == {"type": "error", "message": "wrong token"}, f"a wrong token is refused: {answer}")
    check(wrong.next() is None, "and the connection closed")
    absent = Client("127.0.0.1", port)
    absent.send({"type": "control", "command": "stop", "id": 1})
    answer = absent.next()
    case(answer["type"] == "error" and "requires a token" in answer["message"], f"no token is refused: {answer}")
    check(absent.next() is None, "and the connection closed")
    typed = Client("127.0.0.1", port)
    typed.send({"type": "auth", "token": 5})
    answer = typed.next()
    case(answer["type"] == "error" and 'auth needs a string "token"' in answer["message"], f"a token of the wrong type: {answer}")
    check(run_token(work / "runs/guarded") == "s3cret", "a configured token is the one in the run directory")
    right = Client("127.0.0.1", port, token="s3cret")
    check(right.next()["type"] == "hello", "the right token gets the hello")
    right.until(lambda m: m["type"] == "train")
    right.send({"type": "control", "command": "stop", "id": 2})
    right.until(lambda m: m["type"] == "end")
    case(run.wait() == 0, "the guarded run stopped by the admitted client exits 0")
    case(sum("refused 127.0.0.1:" in line and "token" in line for line in run.log) >= 2,
         "the refusals are logged:\n" + "".join(run.log[-8:]))
    statistics = run.stream_statistics()
    case(statistics is not None and statistics["refused"] >= 2, f"statistics count the refused: {statistics}")


def main():
    loom, src = sys.argv[1], pathlib.Path(sys.argv[2]).resolve()
    work = pathlib.Path(tempfile.mkdtemp(prefix="loom-bad-input-port-"))
    try:
        mistyped_messages(loom, src, work)
        tokens(loom, src, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"{CASES} cases, {len(FAILURES)} failure(s)")
    sys.exit(1 if FAILURES else 0)


if __name__ == "__main__":
    main()
