"""gpu-check's races part: compute-sanitizer's racecheck and synccheck over the kernels that share
memory between threads.

memcheck sees out-of-range and misaligned accesses; it does not see two threads of a block touching
one shared-memory word without a barrier between them, nor a barrier some threads of a block never
reach. Those are the faults a CPU cannot show: the Tensor-Core attention's index logic is checked
lane by lane on the CPU (loom_backend_cuda_emulated_tests), but the emulator runs the lanes one after
another, so a missing __syncthreads() before a cp.async refill, or one skipped by a lane, passes
there. racecheck reports shared-memory hazards (errors; warnings are hazards it cannot prove
harmful), synccheck invalid uses of barriers and warp-synchronous primitives.

The cases: the backend's op cases of the families whose kernels use shared memory or block
barriers (attention and windowed attention, LayerNorm, add & norm, embedding, cross-entropy,
activations with their column sums, softmax, reductions), the Tensor-Core attention tests but their
largest shape (the odd shape, B·H 256 at T 512, d = 128 at T 512) and the windowed attention
tests whose blocks skip tiles outside the band (T 77 window 3 on both kernel families, T 200
window 40 at d = 128 on Tensor Cores), and packed attention's one-launch kernels (blocks past their
sequence's end return before any barrier). Four runs, each with its own log, under the part's one
time limit: synccheck then racecheck on the attention tests (the new kernels first, and synccheck,
the quicker tool, before racecheck), then both on the op cases. A run stopped at the limit counts
the tests it got through, as memcheck does; the runs the limit left out are named in the note.
"""
from __future__ import annotations

import re
import time
from pathlib import Path

# loom_backend_ops_test's cases on backend/cuda whose kernels use shared memory or barriers.
OP_FAMILIES = ["Attention", "WindowedAttention", "LayerNorm", "ResidualLayerNorm", "Embedding", "CrossEntropy",
               "Activations", "Softmax", "Reductions"]
OP_CASES = "--gtest_filter=" + ":".join(f"Backends/{family}.*/cuda" for family in OP_FAMILIES)
# loom_backend_cuda_tests' Tensor-Core attention cases (the B·H = 4,096 shape is left out: under
# racecheck it alone would take minutes), and the windowed ones whose tile walks skip and resume
# the double-buffered loads (the T 512 window 64 shapes are left out for time).
ATTENTION_CASES = ("--gtest_filter=CudaOpTest.AttentionTensorCoreKernelsAgreeWithTheCudaCoreKernels:"
                   "ProductionSizes/AttentionAtProductionSizeTest.*/B2_H8_T512_d128_dropout:"
                   "ProductionSizes/AttentionAtProductionSizeTest.*/B16_H16_T512_d64:"
                   "Bands/WindowedAttentionTest.*/T77_d64_w3_bf16_*:"
                   "Bands/WindowedAttentionTest.*/T200_d128_w40_f16_tensor_cores:"
                   "CudaOpTest.PackedAttentionInOneLaunchEqualsThePerSequenceLaunchesBitForBit")
# The runs in order: (name, tool, which program, its cases).
RUNS = [("synccheck-attention", "synccheck", "cuda_tests", ATTENTION_CASES),
        ("racecheck-attention", "racecheck", "cuda_tests", ATTENTION_CASES),
        ("synccheck-ops", "synccheck", "op_tests", OP_CASES),
        ("racecheck-ops", "racecheck", "op_tests", OP_CASES)]
# A hazard or barrier error as the tools print it, one block of lines each, opening with these.
FINDING = re.compile(r"^========= (Error|Warning|Barrier error|Invalid)\b", re.M)
RACE_SUMMARY = re.compile(r"RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) errors?, (\d+) warnings?\)")
ERROR_SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) errors?")
MIN_SECONDS = 5  # a run is not started with less time than this left


def command(sanitizer: str, tool: str, program: Path, cases: str) -> list:
    return [sanitizer, "--tool", tool, "--error-exitcode", "9", "--print-limit", "20", program, cases]


def races(sanitizer: str, programs: dict, out: Path, limit: float, run, tests_in, env) -> dict:
    """The part: RUNS in turn within `limit` seconds. `run` and `tests_in` are gpu-check's (a
    command under a time limit; the GoogleTest cases a log shows finished); `programs` maps
    "cuda_tests" and "op_tests" to the test programs."""
    start, runs = time.monotonic(), []
    for name, tool, program, cases in RUNS:
        left = limit - (time.monotonic() - start)
        if left < MIN_SECONDS:
            runs.append({"run": name, "status": "not_run"})
            continue
        log = out / f"races-{name}.log"
        status, seconds = run(command(sanitizer, tool, programs[program], cases), log, left, env=env)
        runs.append(run_result(name, tool, status, seconds, log, tests_in(log)))
    return result(runs, round(time.monotonic() - start, 1), limit)


def run_result(name: str, tool: str, status, seconds: float, log: Path, tests_run: int) -> dict:
    """One run from its exit status (None: stopped at its limit), log and finished tests: passed,
    failed, stopped (at the limit, with what it found so far) or refused (the machine would not run
    the tool: no summary and no finished test)."""
    text = log.read_text(errors="replace")
    found = {"run": name, "tool": tool, "seconds": round(seconds, 1), "log": log.name, "tests_run": tests_run}
    summaries = RACE_SUMMARY.findall(text) if tool == "racecheck" else [(e, "0") for e in ERROR_SUMMARY.findall(text)]
    if status is None or not summaries:
        findings = FINDING.findall(text)
        errors = sum(kind != "Warning" for kind in findings)
        if status is not None and tests_run == 0:
            return {**found, "status": "refused", "refusal": last_lines(text, 5)}
        verdict = "stopped" if status is None else "passed" if status == 0 and errors == 0 else "failed"
        return {**found, "status": verdict, "errors": errors, "warnings": len(findings) - errors,
                **({"reason": last_lines(text, 3)} if verdict == "failed" else {})}
    errors = sum(int(e) for e, _ in summaries)
    verdict = "passed" if errors == 0 and status == 0 else "failed"
    return {**found, "status": verdict, "errors": errors, "warnings": sum(int(w) for _, w in summaries),
            **({"reason": f"exit status {status}: {last_lines(text, 3)}"} if verdict == "failed" and not errors
               else {})}


def result(runs: list, seconds: float, limit: float) -> dict:
    """The part from its runs: failed when a run found an error or failed a test, refused when
    every run that started was refused, else passed — with a note naming the runs the limit stopped
    or left out, and racecheck's warnings (hazards it could not prove harmful)."""
    done = [r for r in runs if r["status"] != "not_run"]
    errors = sum(r.get("errors") or 0 for r in done)
    warnings = sum(r.get("warnings") or 0 for r in done)
    part = {"seconds": seconds, "runs": runs, "tests_run": sum(r["tests_run"] for r in done), "errors": errors,
            "warnings": warnings}
    failed = [r for r in done if r["status"] == "failed" or (r.get("errors") or 0) > 0]
    if failed:
        return {"status": "failed", **part, "reason": "; ".join(
            f"{r['run']}: " + (f"{r['errors']} error{'s' if r['errors'] != 1 else ''}" if r.get("errors")
                               else r.get("reason", "failed")) for r in failed)}
    if done and all(r["status"] == "refused" for r in done):
        return {"status": "refused", **part, "refusal": done[0]["refusal"]}
    short = [f"{r['run']} stopped at the limit after {r['tests_run']} tests" for r in runs if r["status"] == "stopped"]
    short += [f"{r['run']} not run" for r in runs if r["status"] == "not_run"]
    notes = ([f"{'; '.join(short)} (limit {limit:g} s)"] if short else []) + (
        [f"{warnings} racecheck warnings (hazards it could not prove harmful): see the logs"] if warnings else [])
    return {"status": "passed", **part, **({"note": "; ".join(notes)} if notes else {})}


def last_lines(text: str, count: int) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return " | ".join(lines[-count:])
