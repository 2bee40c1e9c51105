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
barriers (attention, LayerNorm, add & norm, embedding, cross-entropy, activations with their column
sums, softmax, reductions) and the Tensor-Core attention tests but their largest shape (the odd
shape, B·H 256 at T 512, d = 128 at T 512): a run stopped at its limit counts the tests it got
through, as memcheck does.
"""
from __future__ import annotations

import re
from pathlib import Path

# loom_backend_ops_test's cases on backend/cuda whose kernels use shared memory or barriers.
OP_FAMILIES = ["Attention", "LayerNorm", "ResidualLayerNorm", "Embedding", "CrossEntropy", "Activations",
               "Softmax", "Reductions"]
OP_CASES = "--gtest_filter=" + ":".join(f"Backends/{family}.*/cuda" for family in OP_FAMILIES)
# loom_backend_cuda_tests' Tensor-Core attention cases (the B·H = 4,096 shape is left out: under
# racecheck it alone would take minutes).
ATTENTION_CASES = ("--gtest_filter=CudaOpTest.AttentionTensorCoreKernelsAgreeWithTheCudaCoreKernels:"
                   "ProductionSizes/AttentionAtProductionSizeTest.*/B2_H8_T512_d128_dropout:"
                   "ProductionSizes/AttentionAtProductionSizeTest.*/B16_H16_T512_d64")
TOOLS = ("racecheck", "synccheck")
# A hazard or barrier error as the tools print it, one block of lines each, opening with these.
FINDING = re.compile(r"^========= (Error|Warning|Barrier error|Invalid)\b", re.M)
RACE_SUMMARY = re.compile(r"RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) errors?, (\d+) warnings?\)")
ERROR_SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) errors?")


def commands(sanitizer: str, cuda_tests: Path, op_tests: Path) -> list:
    """Each tool over the attention cases, then over the op cases: four runs in one log."""
    runs = []
    for tool in TOOLS:
        flags = [sanitizer, "--tool", tool, "--error-exitcode", "9", "--print-limit", "20"]
        runs += [[*flags, cuda_tests, ATTENTION_CASES], [*flags, op_tests, OP_CASES]]
    return runs


def result(status, seconds: float, log: Path, limit: float, tests_run: int) -> dict:
    """The part from the runs' first non-zero exit status (None: stopped at the limit), their log and
    the GoogleTest cases it shows finished. Errors fail it; racecheck's warnings are counted and
    reported. Stopped at the limit with no error so far, it passes with a note; a log without any
    tool's summary and without a finished test is the machine refusing the tools."""
    text = log.read_text(errors="replace")
    race_summaries = RACE_SUMMARY.findall(text)
    error_summaries = ERROR_SUMMARY.findall(text)
    part = {"seconds": round(seconds, 1), "log": log.name, "tests_run": tests_run,
            "tools": list(TOOLS), "families": OP_FAMILIES}
    if status is None or (not race_summaries and not error_summaries):
        findings = FINDING.findall(text)
        errors = sum(kind != "Warning" for kind in findings)
        warnings = len(findings) - errors
        if status is not None and tests_run == 0:
            return {"status": "refused", **part, "errors": None, "refusal": last_lines(text, 5)}
        note = (f"{tests_run} tests checked, {errors} error{'s' if errors != 1 else ''}, {warnings} "
                f"warning{'s' if warnings != 1 else ''}" + (f", stopped at the limit of {limit:g} s"
                                                             if status is None else ""))
        verdict = "passed" if errors == 0 and status in (None, 0) else "failed"
        return {"status": verdict, **part, "errors": errors, "warnings": warnings,
                "stopped_at_limit": status is None, ("note" if verdict == "passed" else "reason"): note}
    errors = sum(int(e) for e, _ in race_summaries) + sum(int(e) for e in error_summaries)
    warnings = sum(int(w) for _, w in race_summaries)
    verdict = "passed" if errors == 0 and status == 0 else "failed"
    part.update(status=verdict, errors=errors, warnings=warnings)
    if verdict == "failed":
        part["reason"] = (f"{errors} errors in {tests_run} tests" if errors else
                          f"exit status {status}: {last_lines(text, 3)}")
    elif warnings:
        part["note"] = f"{warnings} racecheck warnings (hazards it could not prove harmful): see {log.name}"
    return part


def last_lines(text: str, count: int) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return " | ".join(lines[-count:])

