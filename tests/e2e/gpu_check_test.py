#!/usr/bin/python3
"""scripts/gpu-check on a machine without a GPU (on one with a GPU, gpu-check itself is the test).

Without --allow-no-gpu it must refuse: exit non-zero and say there is no NVIDIA GPU. With it, it
runs what needs no GPU (the test binaries' GPU-free tests, the skip paths of the others) and writes
summary.json and summary.txt with every GPU part marked skipped; the fields are checked here.
Usage: gpu_check_test.py SOURCE_DIR BUILD_DIR. Exit 77 (skipped) where an NVIDIA GPU is present.
"""
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

source, build = Path(sys.argv[1]), Path(sys.argv[2])
smi = shutil.which("nvidia-smi")
if (smi and "GPU " in subprocess.run([smi, "-L"], capture_output=True, text=True).stdout) or list(
        Path("/dev").glob("nvidia[0-9]*")):
    print("SKIP: this machine has an NVIDIA GPU: run scripts/gpu-check itself")
    sys.exit(77)
failures = []


def check(condition, what):
    if not condition:
        failures.append(what)
        print("FAIL:", what)


gpu_check = source / "scripts/gpu-check"
with tempfile.TemporaryDirectory(prefix="loom-gpu-check-test-") as scratch:
    scratch = Path(scratch)
    refused = subprocess.run([gpu_check, scratch / "refused", "--build", build], capture_output=True, text=True,
                             timeout=60)
    check(refused.returncode != 0, f"without a GPU and without --allow-no-gpu it exited {refused.returncode}")
    check("no NVIDIA GPU on this machine" in refused.stderr, f"the refusal does not say why: {refused.stderr!r}")
    print("refused:", refused.stderr.strip().splitlines()[0] if refused.stderr.strip() else "(nothing on stderr)")

    out = scratch / "allowed"
    allowed = subprocess.run([gpu_check, out, "--build", build, "--allow-no-gpu"], capture_output=True, text=True,
                             timeout=300)
    print(allowed.stdout, allowed.stderr, sep="")
    check(allowed.returncode == 0, f"--allow-no-gpu exited {allowed.returncode}")
    summary = json.loads((out / "summary.json").read_text())
    text = (out / "summary.txt").read_text()
    check(summary["schema"] == 1, "schema")
    check(summary["layout"] == "build tree", f"layout {summary['layout']}")
    check(summary["loom"].startswith("loom "), f"loom version {summary['loom']!r}")
    check(summary["gpu"]["available"] is False and summary["gpu"]["reason"], f"gpu {summary['gpu']}")
    check(summary["require_gpu"] is False, "LOOM_REQUIRE_GPU must not be set without a GPU")
    parts = summary["parts"]
    check(set(parts) == {"data", "gpu_tests", "nccl_one_rank", "memcheck", "end_to_end", "benchmarks"},
          f"parts {sorted(parts)}")
    for name in ("data", "memcheck", "benchmarks"):
        check(parts[name]["status"] == "skipped" and "no NVIDIA GPU" in parts[name]["reason"],
              f"{name}: {parts[name]}")
    tests = parts["gpu_tests"]
    # The GPU-free tests (size classes, device placement, the plugin's descriptor and options) ran and
    # passed; every GPU test skipped.
    check(tests["status"] == "skipped" and tests["failed"] == 0, f"gpu_tests {tests}")
    check(tests["passed"] >= 8 and tests["skipped"] >= 20, f"gpu_tests counts {tests}")
    check((out / tests["log"]).exists(), "gpu_tests log")
    check(parts["nccl_one_rank"]["status"] in ("skipped", "not_built"), f"nccl_one_rank {parts['nccl_one_rank']}")
    check(parts["end_to_end"]["status"] == "skipped", f"end_to_end {parts['end_to_end']}")
    check("SKIP: no usable GPU" in (out / parts["end_to_end"]["log"]).read_text(), "end_to_end's skip reason")
    counted = summary["tests"]
    check(counted["failed"] == 0 and counted["passed"] == tests["passed"], f"tests {counted}")
    check(counted["skipped"] >= tests["skipped"] + 1, f"tests {counted}")
    check(summary["ok"] is True, "ok")
    check(summary["seconds"] < 120, f"took {summary['seconds']} s")
    for line in ("device     none: ", f"tests      {counted['passed']} passed, 0 failed", "benchmarks     skipped",
                 "result     OK"):
        check(line in text, f"summary.txt lacks {line!r}")

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("ok: gpu-check refuses without a GPU, and with --allow-no-gpu writes a summary with the GPU parts skipped")
