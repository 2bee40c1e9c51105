"""scripts/gpu-check's unpadded part: packed batches on the GPU, against padded ones.

Makes pre-training shards at 512 from the documentation corpus with short_seq_prob 0.5 (so rows
carry padding), then runs `loom bench --layouts` on backend/cuda, bf16-mixed, batch 32 × 512 for
bert-base and for a ModernBERT of base size (configs/models/modernbert-base.json): unpadded and
padded steps alternating on the same data, real tokens per second of each, the padding share and
the speed-up against its bound 1 / (1 − padding share). It passes when both models ran both
layouts (the unpadded run packed batches); the figures are what the part is for.

Then PyTorch at the same shapes, when python3 (PYTHON=...) has a torch that sees the GPU: bert-base
as scripts/bench/pytorch_bert_train.py trains it (SDPA, padded: its real tokens/s are its sequences/s
times the real tokens of Loom's batch), and transformers' ModernBertForMaskedLM
(scripts/bench/pytorch_modernbert_train.py) with SDPA and eager attention on a batch padded as
Loom's, and its unpadded FlashAttention-2 path where flash_attn is installed. Each PyTorch side is
recorded with its real tokens/s and Loom's unpadded real tokens/s over it, or with why it was not
measured; a PyTorch side that did not run does not fail the part.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

MODELS = [
    ("bert-base", "configs/models/bert-base.json",
     '["bert.embeddings", { block = "bert.encoder-layer", repeat = "num_hidden_layers" }, "bert.pretraining-heads"]'),
    ("modernbert-base", "configs/models/modernbert-base.json",
     '["modernbert.embeddings", { block = "modernbert.encoder-layer", repeat = "num_hidden_layers" }, '
     '"modernbert.pretraining-heads"]'),
]


# The PyTorch sides of each model's row: (name, attention implementation or None for
# pytorch_bert_train.py).
PYTORCH_SIDES = {"bert-base": [("sdpa", None)],
                 "modernbert-base": [("sdpa", "sdpa"), ("eager", "eager"), ("flash_attention_2", "flash_attention_2")]}
BATCH, SEQ, PREDICTIONS = 32, 512, 80


def pytorch_command(tree: Path, config: str, attention: str | None, padding_share: float) -> list:
    python = os.environ.get("PYTHON", "python3")
    if attention is None:
        return [python, tree / "scripts/bench/pytorch_bert_train.py", "--device", "cuda", "--config", tree / config,
                "--batch", BATCH, "--seq", SEQ, "--predictions", PREDICTIONS, "--precision", "bf16", "--steps", 10,
                "--warmup", 3]
    return [python, tree / "scripts/bench/pytorch_modernbert_train.py", "--config", tree / config, "--attention",
            attention, "--batch", BATCH, "--seq", SEQ, "--padding-share", f"{padding_share:.4f}", "--max-predictions",
            PREDICTIONS, "--steps", 10, "--warmup", 3]


def pytorch_side(name: str, measured: dict | None, loom_real_tokens_per_second: float, padding_share: float,
                 why: str) -> dict:
    """One PyTorch side of a row from its JSON line (None: it printed none; `why` then says why).
    pytorch_bert_train.py trains full rows, so its real tokens/s are those of Loom's batch at its
    sequences/s; pytorch_modernbert_train.py counts its own."""
    if not measured or measured.get("available") is False:
        return {"name": name, "unavailable": (measured or {}).get("reason") or why}
    real = measured.get("real_tokens_per_second") or measured["sequences_per_second"] * SEQ * (1 - padding_share)
    return {"name": name, "real_tokens_per_second": real, "sequences_per_second": measured["sequences_per_second"],
            "peak_memory_bytes": measured.get("peak_memory_bytes"), "ratio": loom_real_tokens_per_second / real}


def recipe(tree: Path, data: Path, shards: Path, config: str, blocks: str) -> str:
    return f"""[run]
name = "gpu-check-unpadded"
output_dir = "{data / 'runs'}"
[backend]
component = "cuda"
[precision]
component = "bf16-mixed"
[tokenizer]
component = "wordpiece"
vocab = "{data / 'vocab.txt'}"
[data]
component = "pretraining-shards"
files = "{shards}/training_*.hdf5"
batch_size = 32
[model]
config = "{tree / config}"
blocks = {blocks}
[optimizer]
component = "adamw"
lr = 1e-4
[schedule]
component = "constant"
"""


def unpadded(loom: Path, tree: Path, out: Path, data: Path, limit: float, run, reason) -> dict:
    shards = data / "seq512-short"
    log = out / "unpadded-prep.log"
    status, seconds = run([loom, "prep", "pretraining", "--vocab", data / "vocab.txt", "--input", data / "text",
                           "--output", shards, "--max-seq-length", "512", "--max-predictions", "80",
                           "--dupe-factor", "5", "--short-seq-prob", "0.5", "--seed", "1"], log, limit / 6)
    if status != 0:
        return {"status": "timed_out" if status is None else "failed", "reason": reason(log), "log": log.name}
    rows = []
    for name, config, blocks in MODELS:
        toml = out / f"unpadded-{name}.toml"
        toml.write_text(recipe(tree, data, shards, config, blocks))
        json_out, row_log = out / f"unpadded-{name}.json", out / f"unpadded-{name}.log"
        status, took = run([loom, "bench", toml, "--layouts", "--json", "--steps", "10", "--warmup", "3"], json_out,
                           limit / 4, stderr=row_log)
        seconds += took
        row = {"model": name, "seconds": round(took, 1), "log": row_log.name, "json": json_out.name}
        try:
            measured = json.loads(json_out.read_text())
            layouts = measured["layouts"]
            row.update(status="passed" if measured.get("unpadded") else "failed",
                       padding_share=layouts["padded"]["padding_share"], speedup=layouts["speedup"],
                       bound=layouts["bound"], share_of_bound=layouts["share_of_bound"],
                       unpadded_real_tokens_per_second=layouts["unpadded"]["real_tokens_per_second"],
                       padded_real_tokens_per_second=layouts["padded"]["real_tokens_per_second"])
            if not measured.get("unpadded"):
                row["reason"] = "the layers did not run packed batches on backend/cuda"
        except (ValueError, KeyError):
            row.update(status="timed_out" if status is None else "failed", reason=reason(row_log))
        rows.append(row)
        if row["status"] != "passed":
            continue
        row["pytorch"] = []
        for side, attention in PYTORCH_SIDES[name]:
            side_out, side_log = out / f"unpadded-{name}-pytorch-{side}.json", out / f"unpadded-{name}-pytorch-{side}.log"
            status, took = run(pytorch_command(tree, config, attention, row["padding_share"]), side_out, limit * 3 / 20,
                               stderr=side_log)
            seconds += took
            try:
                measured = json.loads(side_out.read_text().strip().splitlines()[-1])
            except (ValueError, IndexError):
                measured = None
            row["pytorch"].append(pytorch_side(side, measured, row["unpadded_real_tokens_per_second"],
                                               row["padding_share"], "stopped at its time limit" if status is None
                                               else reason(side_log)))
    ok = all(r["status"] == "passed" for r in rows)
    return {"status": "passed" if ok else "failed", "seconds": round(seconds, 1), "models": rows}


def summary_lines(part: dict) -> list:
    lines = []
    for r in part.get("models", []):
        if r.get("status") != "passed":
            lines.append(f"  unpadded {r['model']}: {r.get('status')} ({r.get('reason', '')})")
            continue
        lines.append(f"  unpadded {r['model']} bf16 32×512, {100 * r['padding_share']:.1f}% padding: "
                     f"{r['unpadded_real_tokens_per_second']:.0f} real tokens/s against "
                     f"{r['padded_real_tokens_per_second']:.0f} padded, {r['speedup']:.2f}× "
                     f"(bound {r['bound']:.2f}×, {100 * r['share_of_bound']:.0f}% of it)")
        for side in r.get("pytorch", []):
            lines.append(f"    pytorch {side['name']}: " + (f"not measured ({side['unavailable']})" if "unavailable" in side
                         else f"{side['real_tokens_per_second']:.0f} real tokens/s, loom unpadded {side['ratio']:.2f}×"))
    return lines
