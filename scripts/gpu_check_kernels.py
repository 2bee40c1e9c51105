"""scripts/gpu-check's kernel_profile part: where a training step's GPU time goes, kernel by kernel.

Runs Nsight Compute (ncu, from the CUDA toolkit) over `loom bench` on bert-large, seq 128, batch 64,
bf16-mixed, NVLAMB (`--steps 1 --warmup 1`: a phase-timed warm-up step, then an untimed one, then
one of each timed) — measuring only each kernel's duration
(`--metrics gpu__time_duration.sum`) at the card's own clocks (`--clock-control none`), over the
first LAUNCHES kernels (about one and a half steps). It sums the durations per kernel name and per
family (attention, GEMM, element-wise, normalisation, embedding, loss, optimizer) and keeps the raw
CSV beside the summary. Without ncu the part is not_available, as memcheck is without
compute-sanitizer, and where ncu cannot profile on this machine (no access to the counters, a
sandboxed runtime) it is refused with ncu's words, as memcheck is when the machine refuses it.
"""
from __future__ import annotations

import csv
import io
import os
import re
import shutil
from pathlib import Path

LAUNCHES = 1600
WORKLOAD = "bert-large seq 128 batch 64, bf16-mixed, NVLAMB"
TOP = 15
# The recipe, with DATA standing for gpu-check's data folder (its vocabulary and seq-128 shards)
# and TREE for the project's root.
RECIPE = """[run]
name = "kernel-profile"
[backend]
component = "cuda"
[precision]
component = "bf16-mixed"
[tokenizer]
component = "wordpiece"
vocab = "DATA/vocab.txt"
[data]
component = "pretraining-shards"
files = "DATA/seq128/training_*.hdf5"
batch_size = 64
[model]
config = "TREE/configs/models/bert-large.json"
blocks = ["bert.embeddings", { block = "bert.encoder-layer", repeat = "num_hidden_layers" }, "bert.pretraining-heads"]
[optimizer]
component = "nvlamb"
lr = 6e-3
[schedule]
component = "constant"
"""
# Families by the first pattern a kernel's name matches (checked in this order); the rest is
# element-wise (casts, bias, GELU, dropout, copies, fills, column sums).
FAMILIES = [
    ("attention", re.compile(r"attention|flash", re.I)),
    ("gemm", re.compile(r"nvjet|cutlass|gemm|splitKreduce|cublas", re.I)),
    ("optimizer", re.compile(r"lamb|adamw|sgd_update|grad_squares|grad_total|step_sizes", re.I)),
    ("normalization", re.compile(r"layernorm", re.I)),
    ("embedding", re.compile(r"gather|scatter|grouping_keys|RadixSort|chunk_sums|run_heads|DeviceScan|check_indices",
                             re.I)),
    ("loss", re.compile(r"cross_entropy|mean_loss", re.I)),
]
# Milliseconds per unit, as ncu writes it ("ns"; "nsecond" in some versions).
# ncu's own words when it cannot profile on the machine (rather than a failure of the program).
REFUSALS = re.compile(r"Failed to initialize the profiler|ERR_NVGPUCTRPERM|permission to access NVIDIA GPU "
                      r"Performance Counters|not supported on this (device|platform)", re.I)
UNITS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3, "nsecond": 1e-6, "usecond": 1e-3, "msecond": 1.0,
         "second": 1e3}


def recipe(data: Path, tree: Path) -> str:
    return RECIPE.replace("DATA", str(data)).replace("TREE", str(tree))


def command(ncu: str, loom: Path, recipe_file: Path, launches: int = LAUNCHES) -> list:
    return [ncu, "--clock-control", "none", "--metrics", "gpu__time_duration.sum", "--csv", "--launch-count",
            str(launches), loom, "bench", recipe_file, "--steps", "1", "--warmup", "1"]


def kernel_name(name: str) -> str:
    """The kernel's name without its argument list ("void f<T>(const float *, ...)" → "void f<T>")."""
    depth = 0
    for index, char in enumerate(name):
        if char == "<":
            depth += 1
        elif char == ">":
            depth -= 1
        elif char == "(" and depth == 0:
            return name[:index].strip()
    return name.strip()


def family(name: str) -> str:
    for label, pattern in FAMILIES:
        if pattern.search(name):
            return label
    return "elementwise"


def durations(text: str) -> list:
    """(kernel name, milliseconds) per profiled launch, from ncu's CSV (its own and the program's
    lines before the header are skipped)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
    if start is None:
        return []
    rows = []
    for row in csv.DictReader(io.StringIO("\n".join(lines[start:]))):
        if row.get("Metric Name") != "gpu__time_duration.sum":
            continue
        scale = UNITS.get(row.get("Metric Unit", ""))
        try:
            value = float(row["Metric Value"].replace(",", ""))
        except (KeyError, ValueError):
            continue
        if scale is not None:
            rows.append((kernel_name(row["Kernel Name"]), value * scale))
    return rows


def summarize(rows: list, top: int = TOP) -> dict:
    """Launches, total milliseconds, the `top` kernels by time and every family's share."""
    total = sum(ms for _, ms in rows)
    by_kernel, by_family = {}, {}
    for name, ms in rows:
        launches, spent = by_kernel.get(name, (0, 0.0))
        by_kernel[name] = (launches + 1, spent + ms)
        label = family(name)
        launches, spent = by_family.get(label, (0, 0.0))
        by_family[label] = (launches + 1, spent + ms)
    share = lambda ms: round(100.0 * ms / total, 1) if total > 0 else 0.0
    kernels = sorted(by_kernel.items(), key=lambda item: -item[1][1])[:top]
    return {"launches": len(rows), "total_ms": round(total, 3),
            "families": {label: {"launches": n, "ms": round(ms, 3), "share_percent": share(ms)}
                         for label, (n, ms) in sorted(by_family.items(), key=lambda item: -item[1][1])},
            "top_kernels": [{"name": name, "launches": n, "ms": round(ms, 3), "share_percent": share(ms)}
                            for name, (n, ms) in kernels]}


def find_ncu() -> str | None:
    """ncu on the PATH, else in the CUDA toolkit or an Nsight Compute installation."""
    found = shutil.which("ncu")
    candidates = [Path(home) / "bin/ncu" for home in (os.environ.get("CUDA_HOME"), "/usr/local/cuda") if home]
    candidates += sorted(Path("/opt/nvidia").glob("nsight-compute/*/ncu"), reverse=True)
    return found or next((str(p) for p in candidates if p.exists()), None)


def kernel_profile(loom: Path, tree: Path, out: Path, data: Path, limit: float, run, reason) -> dict:
    """The part: `run` and `reason` are gpu-check's (a command under a time limit, and why a log
    failed)."""
    ncu = find_ncu()
    if ncu is None:
        return {"status": "not_available", "reason": "ncu (Nsight Compute) is not installed: it comes with the "
                                                     "CUDA toolkit"}
    recipe_file = out / "kernel-profile.toml"
    recipe_file.write_text(recipe(data, tree))
    csv_out, log = out / "kernel-profile.csv", out / "kernel-profile.log"
    status, seconds = run(command(ncu, loom, recipe_file), csv_out, limit, stderr=log)
    part = {"workload": WORKLOAD, "seconds": round(seconds, 1), "csv": csv_out.name, "log": log.name}
    rows = durations(csv_out.read_text(errors="replace")) if csv_out.exists() else []
    if not rows:
        said = "\n".join(p.read_text(errors="replace") for p in (log, csv_out) if p.exists())
        refusal = next((line.strip() for line in said.splitlines() if REFUSALS.search(line)), None)
        if status is not None and refusal is not None:
            return {"status": "refused", **part, "reason": refusal}
        return {"status": "timed_out" if status is None else "failed", **part, "reason": reason(log)}
    part.update(summarize(rows))
    return {"status": "passed" if status == 0 else "failed", **part,
            **({} if status == 0 else {"reason": reason(log)})}


def summary_lines(part: dict) -> list:
    lines = [f"{'kernel_profile':<14} {part['status']}" + (f": {part['reason']}" if part.get("reason") else "")]
    if "total_ms" not in part:
        return lines
    lines.append(f"  {part['workload']}: {part['launches']} kernels, {part['total_ms']:.1f} ms; by family: "
                 + ", ".join(f"{label} {f['share_percent']:.1f}%" for label, f in part["families"].items()))
    for kernel in part["top_kernels"]:
        lines.append(f"  {kernel['share_percent']:5.1f}% {kernel['ms']:9.3f} ms {kernel['launches']:5d}× "
                     f"{kernel['name'][:100]}")
    return lines
