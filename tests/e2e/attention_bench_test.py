#!/usr/bin/python3
"""loom_attention_bench and scripts/bench/compare-attention without a GPU, at a tiny shape.

  attention_bench_test.py program SOURCE_DIR LOOM_ATTENTION_BENCH
    the program on backend/cpu (its reference fused op): B=2, H=2, T=33, d=64, one iteration, in
    bf16 with dropout and key padding and in f32 without; the JSON's fields; bad usage exits 2; a
    backend that cannot run (no such component; backend/cuda on a machine without a GPU) exits 1
    with the reason on stderr.
  attention_bench_test.py compare SOURCE_DIR LOOM_ATTENTION_BENCH
    compare-attention --device cpu --tiny: Loom's figures, PyTorch's or the reason it has none
    (always none under PYTHON=/nonexistent), the text line; figures whose outputs were not finite
    are refused; --device cuda without a GPU exits 1 and says why.
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

mode, source, program = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])
failures = []
TINY = ["--batch", "2", "--heads", "2", "--seq", "33", "--head-dim", "64", "--warmup", "0", "--iterations", "1"]


def check(condition, what):
    if not condition:
        failures.append(what)
        print("FAIL:", what)


def has_gpu():
    smi = shutil.which("nvidia-smi")
    return bool(smi and "GPU " in subprocess.run([smi, "-L"], capture_output=True, text=True).stdout)


def bench(*arguments, env=None):
    return subprocess.run([program, *arguments], capture_output=True, text=True, timeout=120, env=env)


def test_program():
    done = bench("--backend", "cpu", *TINY, "--option", "threads = 1")
    check(done.returncode == 0, f"backend/cpu exited {done.returncode}: {done.stderr}")
    result = json.loads(done.stdout) if done.returncode == 0 else {}
    print(done.stdout)
    expected = {"backend": "backend/cpu", "batch": 2, "heads": 2, "seq": 33, "head_dim": 64, "dtype": "bf16",
                "gradient_dtype": "f32", "dropout": 0.1, "padded_rows": 1, "padded_keys_per_padded_row": 3,
                "fused_attention_recommended": True, "warmup": 0, "iterations": 1, "finite": True}
    for key, value in expected.items():
        check(result.get(key) == value, f"{key}: {result.get(key)!r}, expected {value!r}")
    for key in ("ms_forward_backward", "ms_forward", "ms_backward"):
        check(isinstance(result.get(key), float) and result[key] > 0, f"{key}: {result.get(key)!r}")
    check(isinstance(result.get("device"), str) and result["device"], f"device: {result.get('device')!r}")

    done = bench("--backend", "cpu", *TINY, "--dtype", "f32", "--dropout", "0", "--padded-rows", "0")
    check(done.returncode == 0, f"f32 exited {done.returncode}: {done.stderr}")
    result = json.loads(done.stdout) if done.returncode == 0 else {}
    check(result.get("dtype") == "f32" and result.get("dropout") == 0 and result.get("padded_rows") == 0
          and result.get("finite") is True, f"f32 without dropout or padding: {result}")

    done = bench("--backend", "cpu", "--dtype", "f64")
    check(done.returncode == 2 and "--dtype" in done.stderr, f"--dtype f64: exit {done.returncode}, {done.stderr!r}")
    done = bench("--backend", "nonexistent", *TINY)
    check(done.returncode == 1 and "no backend/nonexistent" in done.stderr,
          f"unknown backend: exit {done.returncode}, {done.stderr!r}")
    if not has_gpu():
        done = bench("--backend", "cuda", *TINY)
        if "no backend/cuda" in done.stderr:
            print("backend/cuda is not built: its refusal is not checked")
        else:
            check(done.returncode == 1 and "no CUDA device" in done.stderr,
                  f"backend/cuda without a GPU: exit {done.returncode}, {done.stderr!r}")
            print("backend/cuda without a GPU:", done.stderr.strip())


def compare(*arguments, env=None):
    return subprocess.run([source / "scripts/bench/compare-attention", "--program", program, *arguments],
                          capture_output=True, text=True, timeout=300, env=env)


def test_compare():
    done = compare("--device", "cpu", "--tiny", "--json")
    print(done.stdout, done.stderr, sep="")
    check(done.returncode == 0, f"--device cpu --tiny exited {done.returncode}")
    rows = json.loads(done.stdout) if done.returncode == 0 else [{}]
    check(len(rows) == 1 and rows[0].get("shape") == "tiny", f"rows: {[r.get('shape') for r in rows]}")
    row = rows[0]
    check(row.get("loom_ms_forward_backward", 0) > 0 and row.get("loom_unavailable") is None, f"loom side: {row}")
    check((row.get("loom") or {}).get("backend") == "backend/cpu", "Loom's own JSON names backend/cpu")
    # Like with like: both sides were given the same shape, dtype, dropout and padding.
    for key in ("batch", "heads", "seq", "head_dim", "dtype", "dropout", "padded_rows", "padded_keys_per_padded_row"):
        for side in ("loom", "pytorch"):
            if row.get(side):
                check(row[side][key] == row["loom"][key], f"{side} {key}: {row[side][key]!r}")
    if row.get("pytorch") is None:
        check(bool(row.get("pytorch_unavailable")) and row.get("ratio") is None, f"pytorch side: {row}")
        check("no PyTorch figures" in done.stderr, "the missing PyTorch side is not reported on stderr")
    else:
        check(abs(row["ratio"] - row["pytorch_ms_forward_backward"] / row["loom_ms_forward_backward"]) < 1e-9,
              f"ratio {row['ratio']}")

    done = compare("--device", "cpu", "--tiny", env=dict(os.environ, PYTHON="/nonexistent/python3"))
    print(done.stdout, done.stderr, sep="")
    check(done.returncode == 0, f"without PyTorch exited {done.returncode}")
    check(done.stdout.startswith("tiny ") and "loom " in done.stdout and "pytorch –" in done.stdout
          and "ratio –" in done.stdout, f"text line: {done.stdout!r}")
    check("no PyTorch figures (/nonexistent/python3" in done.stderr, f"stderr: {done.stderr!r}")

    # A program whose outputs held NaN or inf ("finite": false): its timings are refused, not reported.
    import tempfile
    with tempfile.TemporaryDirectory(prefix="loom-attention-nan-") as scratch:
        wrapper = Path(scratch) / "bench"
        wrapper.write_text(f"#!/bin/sh\n'{program}' \"$@\" | sed 's/\"finite\": *true/\"finite\": false/'\n")
        wrapper.chmod(0o755)
        done = subprocess.run([source / "scripts/bench/compare-attention", "--program", wrapper, "--device", "cpu",
                               "--tiny", "--json"], capture_output=True, text=True, timeout=300,
                              env=dict(os.environ, PYTHON="/nonexistent/python3"))
        rows = json.loads(done.stdout) if done.stdout.strip().startswith("[") else [{}]
        check(done.returncode == 1 and rows[0].get("loom_ms_forward_backward") is None
              and "NaN or inf" in (rows[0].get("loom_unavailable") or "") and "no Loom figures" in done.stderr,
              f"outputs not finite: exit {done.returncode}, {rows[0]}, {done.stderr!r}")

    done = compare("--device", "cpu", "--only", "T999")
    check(done.returncode == 2, f"--only T999 exited {done.returncode}")
    if not has_gpu():
        done = compare("--device", "cuda", "--tiny", "--json")
        check(done.returncode == 1 and "no Loom figures" in done.stderr,
              f"--device cuda without a GPU: exit {done.returncode}, {done.stderr!r}")


{"program": test_program, "compare": test_compare}[mode]()
if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print(f"ok: {mode}")
