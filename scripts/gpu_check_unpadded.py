"""scripts/gpu-check's unpadded part: packed batches on the GPU, against padded ones.

Makes pre-training shards at 512 from the documentation corpus with short_seq_prob 0.5 (so rows
carry padding), then runs `loom bench --layouts` on backend/cuda, bf16-mixed, batch 32 × 512 for
bert-base and for a ModernBERT of base size (configs/models/modernbert-base.json): unpadded and
padded steps alternating on the same data, real tokens per second of each, the padding share and
the speed-up against its bound 1 / (1 − padding share). It passes when both models ran both
layouts (the unpadded run packed batches); the figures are what the part is for.
"""
from __future__ import annotations

import json
from pathlib import Path

MODELS = [
    ("bert-base", "configs/models/bert-base.json",
     '["bert.embeddings", { block = "bert.encoder-layer", repeat = "num_hidden_layers" }, "bert.pretraining-heads"]'),
    ("modernbert-base", "configs/models/modernbert-base.json",
     '["modernbert.embeddings", { block = "modernbert.encoder-layer", repeat = "num_hidden_layers" }, '
     '"modernbert.pretraining-heads"]'),
]


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
                           "--dupe-factor", "5", "--short-seq-prob", "0.5", "--seed", "1"], log, limit / 4)
    if status != 0:
        return {"status": "timed_out" if status is None else "failed", "reason": reason(log), "log": log.name}
    rows = []
    for name, config, blocks in MODELS:
        toml = out / f"unpadded-{name}.toml"
        toml.write_text(recipe(tree, data, shards, config, blocks))
        json_out, row_log = out / f"unpadded-{name}.json", out / f"unpadded-{name}.log"
        status, took = run([loom, "bench", toml, "--layouts", "--json", "--steps", "10", "--warmup", "3"], json_out,
                           limit * 3 / 8, stderr=row_log)
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
    return lines
