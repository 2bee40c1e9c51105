"""scripts/gpu-check's learning part: the GPU quickstart's phase-1 pre-training, run on the machine
under test for a fixed budget on the corpus the operator brought, reporting held-out [MASK]
accuracy against the unigram baseline.

Steps, each under its own time limit, in OUTDIR/learning/:
  1. `loom vocab train` on the corpus directories (8,192 pieces; 1,024 on the CPU);
  2. `loom prep pretraining` at sequence length 128 (dupe factor 10; 1 on the CPU), documents held
     out by `--heldout-fraction` (1%; 20% on the CPU, where the corpus is small);
  3. `loom bench` on configs/quickstart/gpu-pretrain-phase1.toml with that data: seconds per step;
  4. `loom run` of the same recipe with as many steps as fit the budget (so the learning-rate
     schedule ends with the budget), evaluating the held-out shard ten times; stopped with SIGTERM
     if it runs past the budget by more than a grace period (its evaluations so far still count).
On a GPU the recipe runs as the quickstart's (bert-small, bf16-mixed, batch 256, backend/cuda). Without one
(gpu-check --allow-no-gpu) it runs tiny on backend/cpu — bert-tiny, fp32, batch 8 — which checks
the pipeline, not the learning. The curve (step, training minutes, held-out [MASK] accuracy and
loss, MLM loss, the baseline) goes to summary.json; "learned" says whether the last evaluation
reached TARGET_RATIO × the baseline.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

TARGET_RATIO = 2.0  # held-out [MASK] accuracy against the unigram baseline that counts as learning
RECIPE = "configs/quickstart/gpu-pretrain-phase1.toml"
EVALUATIONS = 10
TRAIN_SHARE = 0.9  # of the budget for training steps; the rest for evaluations and checkpoints
SETTINGS = {
    # vocabulary, model config, dupe factor, held-out fraction, calibration steps / warm-up, overrides
    "cuda": {"vocab": 8192, "model": "bert-small-v8192.json", "dupe": 10, "heldout": 0.01, "bench": (20, 5),
             "set": ["backend.component=cuda"]},
    "cpu": {"vocab": 1024, "model": "bert-tiny.json", "dupe": 1, "heldout": 0.2, "bench": (3, 1),
            "set": ["backend.component=cpu", "precision.component=fp32", "data.batch_size=8",
                    "eval_data.batch_size=8", "train.eval_batches=2", "train.log_every=1"]},
}
LIMITS = {"vocab": 300, "prep": 600, "bench": 180}
MIN_BUDGET_SECONDS = 30.0  # under gpu-check --budget, less training time than this is not started


def run_logged(command, log: Path, limit: float, stop_signal=signal.SIGKILL):
    """(exit status or None when stopped at `limit` seconds, seconds). Output to `log`; at the limit the
    process group gets `stop_signal` (loom run checkpoints and exits on SIGTERM), then SIGKILL after 60 s."""
    start = time.monotonic()
    with open(log, "w") as out:
        out.write("$ " + " ".join(str(c) for c in command) + "\n")
        out.flush()
        process = subprocess.Popen([str(c) for c in command], stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        try:
            status = process.wait(timeout=limit)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, stop_signal)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
            status = None
            out.write(f"\n[gpu-check: stopped at the limit of {limit:g} s]\n")
    return status, time.monotonic() - start


def last_line(log: Path) -> str:
    lines = [line.strip() for line in log.read_text(errors="replace").splitlines() if line.strip()]
    for line in reversed(lines):
        if "error" in line.lower():
            return line
    return lines[-1] if lines else "(no output)"


def curve_of(metrics: Path) -> list:
    """Every held-out evaluation with the [MASK] split: step, training minutes (the step times of the
    train records up to it, evaluations excluded), [MASK] accuracy and loss, MLM loss, the baseline."""
    records = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
    points, minutes, last_step = [], 0.0, 0
    for record in records:
        if record.get("type") == "train" and "step_ms" in record:
            minutes += record["step_ms"] * (record["step"] - last_step) / 60000
            last_step = record["step"]
        elif record.get("type") == "eval" and "eval_mlm_mask_accuracy" in record:
            points.append({"step": record["step"], "minutes": round(minutes, 3),
                           "mask_accuracy": record["eval_mlm_mask_accuracy"],
                           "mask_loss": record["eval_mlm_mask_loss"], "mlm_loss": record["eval_mlm_loss"],
                           "mlm_accuracy": record["eval_mlm_accuracy"],
                           "unigram_baseline": record["eval_mlm_unigram_baseline"]})
    return points


def learning(loom: Path, tree: Path, out: Path, corpora: list, minutes: float, device: str,
             deadline: float | None = None) -> dict:
    """The learning part's result for summary.json (status passed when the run trained and evaluated;
    "learned" says whether it reached TARGET_RATIO × the unigram baseline). `deadline`
    (time.monotonic(), gpu-check --budget): no step runs past it, and the training budget shrinks so
    that the run and its grace end before it."""
    settings = SETTINGS[device]
    work = out / "learning"
    work.mkdir(parents=True, exist_ok=True)
    missing = [str(c) for c in corpora if not Path(c).is_dir()]
    if missing:
        return {"status": "failed", "reason": f"--corpus {', '.join(missing)}: not a directory (scripts/fetch-data "
                "writes data/raw and data/raw-extra; bring them to this machine)"}
    result = {"device": device, "budget_minutes": minutes, "corpus": [str(c) for c in corpora],
              "recipe": RECIPE, "model": settings["model"], "target_ratio": TARGET_RATIO, "logs": []}

    def step(name, command, limit, stop_signal=signal.SIGKILL):
        log = work / f"{name}.log"
        result["logs"].append(f"learning/{log.name}")
        if deadline is not None:
            limit = min(limit, deadline - time.monotonic())
        if limit < 1:
            log.write_text("[gpu-check: not started: the --budget had run out]\n")
            return None, log
        status, seconds = run_logged(command, log, limit, stop_signal)
        result[f"{name}_seconds"] = round(seconds, 1)
        return status, log

    vocab, shards, model = work / "vocab.txt", work / "seq128", work / "model.json"
    status, log = step("vocab", [loom, "vocab", "train", "--input", *corpora, "--size", settings["vocab"],
                                 "--output", vocab], LIMITS["vocab"])
    if status != 0:
        return {**result, "status": "timed_out" if status is None else "failed", "reason": "vocab: " + last_line(log)}
    config = json.loads((tree / "configs/models" / settings["model"]).read_text())
    config["vocab_size"] = sum(1 for _ in vocab.open())
    model.write_text(json.dumps(config, indent=2) + "\n")
    status, log = step("prep", [loom, "prep", "pretraining", "--vocab", vocab, "--input", *corpora, "--output", shards,
                                "--max-seq-length", 128, "--max-predictions", 20, "--dupe-factor", settings["dupe"],
                                "--heldout-fraction", settings["heldout"], "--seed", 12345], LIMITS["prep"])
    if status != 0:
        return {**result, "status": "timed_out" if status is None else "failed", "reason": "prep: " + last_line(log)}
    manifest = json.loads((shards / "manifest.json").read_text())
    result["corpus_tokens"] = manifest.get("tokens")
    if not list(shards.glob("heldout_*.hdf5")):
        return {**result, "status": "failed", "reason": f"prep held out no document of the corpus ({shards})"}

    overrides = [f"tokenizer.vocab={vocab}", f"model.config={model}", f"data.files={shards}/training_*.hdf5",
                 f"eval_data.files={shards}/heldout_*.hdf5", *settings["set"]]
    sets = [item for o in overrides for item in ("--set", o)]
    recipe = tree / RECIPE
    timed, warmup = settings["bench"]
    status, log = step("bench", [loom, "bench", recipe, *sets, "--steps", timed, "--warmup", warmup, "--json"],
                       LIMITS["bench"])
    text = log.read_text(errors="replace")
    start = text.find("\n{")
    try:
        measured = json.loads(text[start + 1:text.rindex("}") + 1]) if start >= 0 else None
    except ValueError:
        measured = None
    step_seconds = measured_step_seconds(measured)
    if status != 0 or step_seconds is None:
        return {**result, "status": "timed_out" if status is None else "failed", "reason": "bench: " + last_line(log)}
    budget = minutes * 60
    if deadline is not None:  # the run and its grace (below) before the deadline
        left = deadline - time.monotonic()
        budget = min(budget, left / 1.25, left - 30.0)
        result["budget_minutes"] = round(budget / 60, 2)
        if budget < MIN_BUDGET_SECONDS:
            return {**result, "status": "skipped", "requested": True,
                    "reason": f"--budget: {max(left, 0):.0f} s left, too little to train in"}
    steps = max(2, int(budget * TRAIN_SHARE / step_seconds))
    result.update(calibrated_step_ms=round(step_seconds * 1000, 2), steps=steps)
    grace = max(30.0, 0.25 * budget)
    status, log = step("run", [loom, "run", recipe, "--headless", *sets, "--set", f"train.steps={steps}",
                               "--set", f"train.eval_every={max(1, steps // EVALUATIONS)}", "--set", "checkpoint.every=0",
                               "--set", f"run.output_dir={work / 'runs'}", "--set", "run.name=learning"],
                       budget + grace, stop_signal=signal.SIGTERM)
    metrics = work / "runs/learning/metrics.jsonl"
    curve = curve_of(metrics) if metrics.exists() else []
    result["curve"] = curve
    if status is None:
        result["stopped_at_limit"] = True
        result["note"] = f"stopped {grace:g} s past the {budget / 60:.3g}-minute budget; evaluations so far count"
    if not curve:
        return {**result, "status": "timed_out" if status is None else "failed",
                "reason": "run: " + (last_line(log) if status != 0 else "no held-out evaluation with the [MASK] split")}
    if status not in (0, None):
        return {**result, "status": "failed", "reason": "run: " + last_line(log)}
    last = curve[-1]
    ratio = last["mask_accuracy"] / last["unigram_baseline"] if last["unigram_baseline"] else None
    result.update(status="passed", mask_accuracy=last["mask_accuracy"], mask_loss=last["mask_loss"],
                  mlm_loss=last["mlm_loss"], unigram_baseline=last["unigram_baseline"],
                  ratio=round(ratio, 3) if ratio is not None else None, trained_minutes=last["minutes"],
                  learned=ratio is not None and ratio >= TARGET_RATIO)
    return result


def measured_step_seconds(measured) -> float | None:
    """Seconds per training step from `loom bench --json`: its ms_per_step total (the whole step, data
    and upload included)."""
    total = measured.get("ms_per_step", {}).get("total") if isinstance(measured, dict) else None
    return total / 1000 if isinstance(total, (int, float)) and total > 0 else None


def summary_lines(part: dict) -> list:
    """summary.txt's lines for the learning part."""
    head = f"{'learning':<14} {part['status']}"
    if part["status"] != "passed":
        return [head + (f": {part['reason']}" if part.get("reason") else "")]
    target = "reached" if part["learned"] else "not reached"
    model = part["model"].removesuffix(".json")
    lines = [head + f": held-out [MASK] accuracy {100 * part['mask_accuracy']:.1f}% against the unigram baseline "
             f"{100 * part['unigram_baseline']:.1f}% ({part['ratio']:.2f}x; {TARGET_RATIO:g}x {target}), "
             f"{model} on backend/{part['device']}, {part['steps']} steps in {part['trained_minutes']:.1f} min"
             + (f" ({part['note']})" if part.get("note") else "")]
    for point in part["curve"]:
        lines.append(f"  {point['minutes']:6.2f} min  step {point['step']:>6}  [MASK] {100 * point['mask_accuracy']:5.1f}%"
                     f"  [MASK] loss {point['mask_loss']:.3f}  MLM loss {point['mlm_loss']:.3f}")
    return lines
