"""The quickstart's summary and picture, from its runs' metrics.jsonl files.

Usage: /usr/bin/python3 scripts/quickstart_report.py RUNS_DIR STAGE_SECONDS_JSON PHASE1_CHECKPOINT [DEVICE] [MODEL]
Reads RUNS_DIR/quickstart-phase1 (training loss, held-out evaluations split by [MASK] / kept /
random positions), quickstart-spam and quickstart-spam-scratch (full data),
quickstart-spam-lowres-{pretrained,scratch}-seedN (200 labelled mails) and, where they exist (the
quickstart on a GPU), quickstart-squad-mentions-{pretrained,scratch}. Writes
RUNS_DIR/quickstart/summary.json and RUNS_DIR/quickstart/report.png, prints the table. DEVICE (cpu
or cuda, default cpu) and the phase-1 model are recorded in the summary. MODEL (modernbert or bert,
default bert) names the family pre-trained; for modernbert the held-out curve is drawn against
BERT's measured one (BERT_REFERENCE, the CPU quickstart's BERT phase 1 on the same held-out set).
"""
import json
import pathlib
import statistics
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def records(run_dir, kind):
    path = pathlib.Path(run_dir, "metrics.jsonl")
    return [r for r in map(json.loads, path.read_text().splitlines()) if r.get("type") == kind]


def last_eval(run_dir):
    evals = records(run_dir, "eval")
    if not evals:
        sys.exit(f"quickstart_report: {run_dir}/metrics.jsonl has no eval record")
    return evals[-1]


def seeded_runs(runs, prefix):
    found = sorted(p for p in runs.glob(prefix + "-seed*") if (p / "metrics.jsonl").exists())
    if not found:
        sys.exit(f"quickstart_report: no {prefix}-seed* runs under {runs}")
    return [last_eval(p) for p in found]


def spread(values):
    return {"mean": statistics.fmean(values), "min": min(values), "max": max(values),
            "stdev": statistics.stdev(values) if len(values) > 1 else 0.0, "values": values}


# BERT's phase 1 on the CPU (scripts/quickstart --model bert), its held-out evaluations: drawn beside
# ModernBERT's so the report shows what the family changes (docs/performance.md, "ModernBERT on two cores").
BERT_REFERENCE = pathlib.Path(__file__).resolve().parent.parent / "docs/measurements/quickstart-cpu-2026-11-28/bert-phase1-eval.jsonl"


def reference_evals():
    try:
        return [r for r in map(json.loads, BERT_REFERENCE.read_text().splitlines()) if "eval_mlm_mask_accuracy" in r]
    except OSError:
        return []


def plot(path, phase1_train, phase1_evals, fine_tuning, model="bert"):
    figure, (loss_axes, accuracy_axes, bars_axes) = plt.subplots(1, 3, figsize=(16, 4.8))

    if model == "bert":
        loss_axes.plot([r["step"] for r in phase1_train], [r["loss"] for r in phase1_train], label="total")
    loss_axes.plot([r["step"] for r in phase1_train], [r["mlm_loss"] for r in phase1_train], label="masked LM")
    loss_axes.set_title(f"Pre-training ({model}): training loss")
    loss_axes.set_xlabel("step")
    loss_axes.set_ylabel("nats")
    loss_axes.grid(alpha=0.3)
    loss_axes.legend()

    steps = [r["step"] for r in phase1_evals]
    for key, label in (("eval_mlm_mask_accuracy", "[MASK] positions"), ("eval_mlm_accuracy", "all labelled (conventional)")):
        accuracy_axes.plot(steps, [100 * r[key] for r in phase1_evals], marker="o", label=f"{model}, {label}")
    reference = reference_evals() if model != "bert" else []
    if reference:
        accuracy_axes.plot([r["step"] for r in reference], [100 * r["eval_mlm_mask_accuracy"] for r in reference],
                           marker=".", color="tab:red", label="bert (measured), [MASK] positions")
    baseline = 100 * phase1_evals[-1]["eval_mlm_unigram_baseline"]
    accuracy_axes.axhline(baseline, color="grey", linestyle=":", label=f"unigram baseline {baseline:.1f}%")
    multiple = 2 if model == "bert" else 3  # what each family's quickstart is held to
    accuracy_axes.axhline(multiple * baseline, color="grey", linestyle="--",
                          label=f"{multiple}x baseline {multiple * baseline:.1f}%")
    accuracy_axes.set_title("Held-out masked-LM accuracy (15% masks)")
    accuracy_axes.set_xlabel("step")
    accuracy_axes.set_ylabel("%")
    accuracy_axes.set_ylim(bottom=0)
    accuracy_axes.grid(alpha=0.3)
    accuracy_axes.legend(fontsize=8)

    groups = [("full data\naccuracy", "full", "accuracy"), ("full data\nF1", "full", "f1"),
              ("200 mails\naccuracy", "lowres", "accuracy"), ("200 mails\nF1", "lowres", "f1")]
    width = 0.38
    for offset, (init, color) in ((-width / 2, ("pretrained", "tab:blue")), (width / 2, ("scratch", "tab:orange"))):
        means, errors_low, errors_high, points = [], [], [], []
        for index, (_, data, metric) in enumerate(groups):
            s = fine_tuning[data][init][metric]
            means.append(100 * s["mean"])
            # max(0, ...): the mean of equal values can round a hair past them.
            errors_low.append(max(0.0, 100 * (s["mean"] - s["min"])))
            errors_high.append(max(0.0, 100 * (s["max"] - s["mean"])))
            points += [(index + offset, 100 * v) for v in s["values"]]
        positions = [i + offset for i in range(len(groups))]
        bars_axes.bar(positions, means, width, color=color, label=f"from {init}" if init == "scratch" else "pre-trained",
                      yerr=[errors_low, errors_high], capsize=4)
        bars_axes.scatter([p[0] for p in points], [p[1] for p in points], color="black", s=8, zorder=3)
        for x, y in zip(positions, means):
            bars_axes.text(x, y / 2, f"{y:.1f}", ha="center", color="white", fontsize=8)
    bars_axes.set_xticks(range(len(groups)), [g[0] for g in groups])
    bars_axes.set_ylim(0, 100)
    bars_axes.set_title("Spam fine-tuning, test set (whiskers: min-max of 3 seeds)")
    bars_axes.set_ylabel("%")
    bars_axes.legend(loc="lower left")
    figure.tight_layout()
    figure.savefig(path, dpi=100)


def phase1_model(checkpoint):
    """"bert-tiny"-style description of the phase-1 checkpoint's config.json (layers × hidden, vocab)."""
    try:
        config = json.loads(pathlib.Path(checkpoint, "config.json").read_text())
    except (OSError, ValueError):
        return None
    return {k: config.get(k) for k in ("num_hidden_layers", "hidden_size", "num_attention_heads", "vocab_size")}


def squad_results(runs):
    """Exact match and F1 of the SQuAD-format stand-in from the pre-trained weights and from scratch,
    or None when the quickstart did not run it (on the CPU)."""
    found = {init: runs / f"quickstart-squad-mentions-{init}" for init in ("pretrained", "scratch")}
    if not all((path / "metrics.jsonl").exists() for path in found.values()):
        return None
    return {init: {m: last_eval(path)["eval_" + m] for m in ("exact_match", "f1")} for init, path in found.items()}


def main(runs_dir, stage_seconds, checkpoint, device="cpu", model="bert"):
    runs = pathlib.Path(runs_dir)
    phase1 = runs / "quickstart-phase1"
    phase1_evals = [r for r in records(phase1, "eval") if "eval_mlm_mask_accuracy" in r]
    if not phase1_evals:
        sys.exit(f"quickstart_report: {phase1}/metrics.jsonl has no eval record with the [MASK] split")
    p1 = phase1_evals[-1]
    full = {"pretrained": last_eval(runs / "quickstart-spam"), "scratch": last_eval(runs / "quickstart-spam-scratch")}
    lowres = {init: seeded_runs(runs, f"quickstart-spam-lowres-{init}") for init in ("pretrained", "scratch")}
    fine_tuning = {
        "full": {init: {m: spread([r["eval_" + m]]) for m in ("accuracy", "f1")} for init, r in full.items()},
        "lowres": {init: {m: spread([r["eval_" + m] for r in rs]) for m in ("accuracy", "f1")}
                   for init, rs in lowres.items()},
    }
    summary = {
        "heldout_mlm_loss": p1["eval_mlm_loss"], "heldout_mlm_accuracy": p1["eval_mlm_accuracy"],
        "heldout_nsp_accuracy": p1.get("eval_nsp_accuracy"),  # None: a model without next-sentence prediction
        "heldout_mask_accuracy": p1["eval_mlm_mask_accuracy"], "heldout_mask_loss": p1["eval_mlm_mask_loss"],
        "heldout_kept_accuracy": p1["eval_mlm_kept_accuracy"], "heldout_kept_loss": p1["eval_mlm_kept_loss"],
        "heldout_random_accuracy": p1["eval_mlm_random_accuracy"], "heldout_random_loss": p1["eval_mlm_random_loss"],
        "heldout_unigram_baseline": p1["eval_mlm_unigram_baseline"],
        "spam_accuracy_pretrained": full["pretrained"]["eval_accuracy"], "spam_f1_pretrained": full["pretrained"]["eval_f1"],
        "spam_accuracy_scratch": full["scratch"]["eval_accuracy"], "spam_f1_scratch": full["scratch"]["eval_f1"],
        "spam_lowres_accuracy_pretrained": fine_tuning["lowres"]["pretrained"]["accuracy"]["mean"],
        "spam_lowres_accuracy_scratch": fine_tuning["lowres"]["scratch"]["accuracy"]["mean"],
        "spam_lowres_f1_pretrained": fine_tuning["lowres"]["pretrained"]["f1"]["mean"],
        "spam_lowres_f1_scratch": fine_tuning["lowres"]["scratch"]["f1"]["mean"],
        "spam_lowres_seeds": {init: {m: s["values"] for m, s in metrics.items()}
                              for init, metrics in fine_tuning["lowres"].items()},
        "stage_seconds": json.loads(stage_seconds), "phase1_checkpoint": checkpoint,
        "device": device, "phase1_model": phase1_model(checkpoint), "model": model,
    }
    squad = squad_results(runs)
    if squad is not None:
        summary.update({f"squad_mentions_{m}_{init}": squad[init][m] for init in squad for m in ("exact_match", "f1")})
    out = runs / "quickstart"
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    plot(out / "report.png", records(phase1, "train"), phase1_evals, fine_tuning, model)

    s = summary
    rows = [
        ("model pre-trained", model),
        ("held-out MLM loss / accuracy (phase 1)", f"{s['heldout_mlm_loss']:.3f} / {100 * s['heldout_mlm_accuracy']:.1f}%"),
        ("held-out accuracy, [MASK] / kept / random", f"{100 * s['heldout_mask_accuracy']:.1f}% / "
         f"{100 * s['heldout_kept_accuracy']:.1f}% / {100 * s['heldout_random_accuracy']:.1f}%"),
        ("held-out loss, [MASK] / kept / random", f"{s['heldout_mask_loss']:.3f} / {s['heldout_kept_loss']:.3f} / "
         f"{s['heldout_random_loss']:.3f}"),
        ("unigram baseline (commonest target)", f"{100 * s['heldout_unigram_baseline']:.1f}% ([MASK] accuracy is "
         f"{s['heldout_mask_accuracy'] / s['heldout_unigram_baseline']:.2f}x)"),
        ("spam, all mails, pre-trained", f"{100 * s['spam_accuracy_pretrained']:.1f}% / F1 {s['spam_f1_pretrained']:.3f}"),
        ("spam, all mails, from scratch", f"{100 * s['spam_accuracy_scratch']:.1f}% / F1 {s['spam_f1_scratch']:.3f}"),
    ]
    if s["heldout_nsp_accuracy"] is not None:
        rows.insert(5, ("held-out NSP accuracy (phase 1)", f"{100 * s['heldout_nsp_accuracy']:.1f}%"))
    for init, label in (("pretrained", "pre-trained"), ("scratch", "from scratch")):
        a, f1 = fine_tuning["lowres"][init]["accuracy"], fine_tuning["lowres"][init]["f1"]
        rows.append((f"spam, 200 mails, {label} (3 seeds)", f"{100 * a['mean']:.1f}% (min {100 * a['min']:.1f}, "
                     f"max {100 * a['max']:.1f}) / F1 {f1['mean']:.3f}"))
    if squad is not None:
        for init, label in (("pretrained", "pre-trained"), ("scratch", "from scratch")):
            rows.append((f"squad-mentions, {label}", f"EM {squad[init]['exact_match']:.1f} / F1 {squad[init]['f1']:.1f}"))
    rows += [("device", device), ("stage seconds", ", ".join(f"{k} {v}" for k, v in s["stage_seconds"].items())),
             ("phase-1 checkpoint", checkpoint), ("summary", str(out / "summary.json")),
             ("picture", str(out / "report.png"))]
    print("\nLoom quickstart")
    for label, value in rows:
        print(f"  {label:43} {value}")



if __name__ == "__main__":
    main(*sys.argv[1:6])
