#!/usr/bin/env python3
"""Checks one GLUE fine-tuning of glue_finetuning_test.sh and prints its row for docs/finetuning.md.

Usage: glue_finetuning_check.py RECIPE DEV_FILE EVAL_JSON METRICS_JSONL CHECKPOINT_DIR

- The metrics `loom eval` printed must clear the trivial baseline of the dev file by a margin:
  MRPC: the majority class (accuracy = its share; F1 of always answering "1" = 2p/(1+p) with p the
  share of 1s); CoLA: the majority class (MCC 0); STS-B: a constant prediction (correlation 0,
  undefined in SciPy's terms).
- The run's own final eval record (metrics.jsonl) must hold the same figures: the run and
  `loom eval` scored the same weights.
- The checkpoint's config.json must rebuild the head in Hugging Face: its label maps, and for
  STS-B problem_type "regression" with one output; model.safetensors' classifier matches.
"""
import json
import struct
import sys

# recipe -> {metric: the margin by which it must clear its baseline}
TASKS = {
    "glue-mrpc": {"accuracy": 0.15, "f1": 0.08},
    "glue-cola": {"mcc": 0.5},
    "glue-stsb": {"pearson": 0.8, "spearman": 0.8},
}


def dev_labels(recipe, path):
    with open(path, encoding="utf-8-sig") as f:
        rows = [line.rstrip("\r\n").split("\t") for line in f if line.strip()]
    if recipe == "glue-mrpc":
        return [int(r[0]) for r in rows[1:]]
    if recipe == "glue-cola":
        return [int(r[1]) for r in rows]
    return [float(r[-1]) for r in rows[1:]]


def baselines(recipe, labels):
    if recipe == "glue-stsb":
        return {"pearson": 0.0, "spearman": 0.0}, "constant prediction (no correlation)"
    p = sum(labels) / len(labels)
    majority = max(p, 1 - p)
    if recipe == "glue-mrpc":
        return {"accuracy": majority, "f1": 2 * p / (1 + p)}, f"majority class \"1\" ({p:.1%} of dev)"
    return {"mcc": 0.0}, f"majority class \"1\" ({p:.1%} of dev)"


def safetensors_shapes(path):
    with open(path, "rb") as f:
        (size,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(size))
    return {k: v["shape"] for k, v in header.items() if k != "__metadata__"}


def main():
    recipe, dev, eval_json, metrics_jsonl, checkpoint = sys.argv[1:6]
    problems = []
    with open(eval_json) as f:
        evaluated = json.load(f)
    labels = dev_labels(recipe, dev)
    if evaluated.get("eval_examples") != len(labels):
        problems.append(f"evaluated {evaluated.get('eval_examples')} examples, the dev file has {len(labels)}")
    base, base_name = baselines(recipe, labels)
    row = []
    for metric, margin in TASKS[recipe].items():
        value = evaluated.get("eval_" + metric)
        row.append(f"{metric} {value:.3f} (baseline {base[metric]:.3f})" if value is not None else f"{metric} null")
        if value is None or value < base[metric] + margin:
            problems.append(f"eval_{metric} = {value}, needs at least {base[metric] + margin:.3f} "
                            f"(baseline {base[metric]:.3f} + {margin})")
    print(f"{recipe}: {', '.join(row)}; baseline: {base_name}; eval_loss {evaluated['eval_loss']:.4f}")

    records = [json.loads(line) for line in open(metrics_jsonl) if '"type":"eval"' in line.replace(" ", "")]
    if not records:
        problems.append("the run wrote no eval record")
    else:
        last = records[-1]
        for metric in TASKS[recipe]:
            key = "eval_" + metric
            if key not in last or abs(last[key] - evaluated["eval_" + metric]) > 1e-6:
                problems.append(f"the run's eval record has {key} = {last.get(key)}, loom eval {evaluated[key]}")

    with open(f"{checkpoint}/config.json") as f:
        config = json.load(f)
    shapes = safetensors_shapes(f"{checkpoint}/model.safetensors")
    outputs = 1 if recipe == "glue-stsb" else 2
    if shapes.get("classifier.weight", [None])[0] != outputs:
        problems.append(f"classifier.weight has shape {shapes.get('classifier.weight')}, expected {outputs} rows")
    if recipe == "glue-stsb":
        if config.get("problem_type") != "regression" or config.get("id2label") != {"0": "LABEL_0"}:
            problems.append(f"config.json: problem_type {config.get('problem_type')}, id2label {config.get('id2label')}")
    elif config.get("id2label") != {"0": "0", "1": "1"} or "problem_type" in config:
        problems.append(f"config.json: id2label {config.get('id2label')}, problem_type {config.get('problem_type')}")
    if config.get("architectures") != ["BertForSequenceClassification"]:
        problems.append(f"config.json: architectures {config.get('architectures')}")

    for p in problems:
        print(f"  {recipe}: {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
