"""scripts/gpu-check's inference part: Loom against PyTorch at serving batch sizes on the GPU.

Runs scripts/bench/compare-pytorch-inference --device cuda on bert-base with the span head (SQuAD's
start/end logits), bf16, batch 1, 8 and 32 × sequence 128 and 384, 20 timed requests per row after
3, both sides in the same run, and reports per row sequences per second, Loom / PyTorch and the
p50/p90/p99 latencies of both. It passes when every row was measured on both sides; "p50_at_most_
pytorch" says whether Loom's p50 is at most PyTorch's at batch 1 and 8 (the serving batch sizes).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

BATCH_SIZES = "1,8,32"
SEQ_LENGTHS = "128,384"
SERVING_BATCHES = (1, 8)


def command(tree: Path, steps: int = 20, warmup: int = 3) -> list:
    return [tree / "scripts/bench/compare-pytorch-inference", "--device", "cuda", "--json", "--model", "bert-base",
            "--batch-sizes", BATCH_SIZES, "--seq-lengths", SEQ_LENGTHS, "--precisions", "bf16",
            "--steps", str(steps), "--warmup", str(warmup)]


def environment(loom: Path) -> dict:
    return dict(os.environ, LOOM=str(loom))


def result(status, seconds: float, json_out: Path, log: Path, why: str) -> dict:
    """The part from compare-pytorch-inference's exit status (None: stopped at its limit), its JSON
    rows and, when it failed, `why` (the end of its log)."""
    part = {"seconds": round(seconds, 1), "log": log.name, "json": json_out.name}
    try:
        rows = json.loads(json_out.read_text())
    except ValueError:
        return {"status": "timed_out" if status is None else "failed", **part, "reason": why}
    part["rows"] = rows
    serving = [r for r in rows if r["batch"] in SERVING_BATCHES]
    part["p50_at_most_pytorch"] = bool(serving) and all(
        r["loom_latency_ms"]["p50"] <= r["pytorch_latency_ms"]["p50"] for r in serving)
    return {"status": "passed" if status == 0 else "failed", **part, **({} if status == 0 else {"reason": why})}


def summary_lines(part: dict) -> list:
    lines = [f"{'inference':<14} {part['status']}" + (f": {part['reason']}" if part.get("reason") else "")]
    for r in part.get("rows", []):
        ms = lambda side: "/".join(f"{r[side + '_latency_ms'][k]:.1f}" for k in ("p50", "p90", "p99"))
        lines.append(f"  inference batch {r['batch']} × seq {r['seq']} {r['precision']}: loom "
                     f"{r['loom_sequences_per_second']:.1f} seq/s (p50/p90/p99 {ms('loom')} ms), pytorch "
                     f"{r['pytorch_sequences_per_second']:.1f} seq/s ({ms('pytorch')} ms), ratio {r['ratio']:.2f}")
    if "p50_at_most_pytorch" in part:
        lines.append("  p50 at batch 1 and 8 " + ("at most PyTorch's" if part["p50_at_most_pytorch"] else
                                                  "above PyTorch's in some row"))
    return lines
