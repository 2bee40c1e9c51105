"""Held-out [MASK] accuracy against wall-clock training time for scripts/bench/mlm-sweep's runs.

Usage: /usr/bin/python3 scripts/bench/mlm_sweep_report.py RUNS_DIR PLOT.png [WHAT]
(WHAT names the runs in the title; given, the x axis is minutes on the device that ran them instead
of seconds on the 2-core machine.)
Writes RUNS_DIR/results.json (one entry a run: its eval points and training seconds) and the plot;
prints a table. Training seconds are the sum of step_ms over the train records (evaluation time
left out), so candidates compare by the time their training steps take.
"""
import json
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read_run(path):
    """Eval points of one metrics.jsonl with the training seconds spent up to each."""
    seconds, last_step, points = 0.0, 0, []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        if record.get("type") == "train":
            seconds += record["step_ms"] * (record["step"] - last_step) / 1000.0
            last_step = record["step"]
        elif record.get("type") == "eval" and "eval_mlm_mask_accuracy" in record:
            points.append({"step": record["step"], "seconds": seconds,
                           "mask_accuracy": record["eval_mlm_mask_accuracy"],
                           "mask_loss": record["eval_mlm_mask_loss"],
                           "overall_accuracy": record["eval_mlm_accuracy"],
                           "unigram_baseline": record["eval_mlm_unigram_baseline"]})
    return {"points": points, "train_seconds": seconds, "steps": last_step}


def main(runs_dir, plot_path, what=None):
    runs = {}
    for metrics in sorted(pathlib.Path(runs_dir).glob("*/metrics.jsonl")):
        run = read_run(metrics)
        if run["points"]:
            runs[metrics.parent.name] = run
    if not runs:
        sys.exit(f"mlm_sweep_report: no eval records with [MASK] accuracy under {runs_dir}")
    pathlib.Path(runs_dir, "results.json").write_text(json.dumps(runs, indent=1))

    figure, axes = plt.subplots(figsize=(8, 5))
    baselines = {}
    for name, run in runs.items():
        xs = [p["seconds"] / (60 if what else 1) for p in run["points"]]
        ys = [100 * p["mask_accuracy"] for p in run["points"]]
        line, = axes.plot(xs, ys, marker="o", markersize=3, label=name)
        baseline = 100 * run["points"][-1]["unigram_baseline"]
        baselines.setdefault(round(baseline, 2), line.get_color())
    for baseline, color in baselines.items():
        axes.axhline(baseline, color=color, linestyle=":", linewidth=1)
        axes.axhline(2 * baseline, color=color, linestyle="--", linewidth=1)
    axes.set_xlabel("training minutes (evaluation excluded)" if what else "training seconds (2 cores, evaluation excluded)")
    axes.set_ylabel("held-out [MASK] accuracy, %")
    axes.set_title(f"{what or 'Quickstart phase 1'} candidates (dotted: unigram baseline, dashed: 2x)")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(plot_path, dpi=110)

    print(f"{'candidate':28} {'steps':>6} {'train s':>8} {'[MASK] acc':>10} {'baseline':>8} {'ratio':>6}")
    for name, run in runs.items():
        last = run["points"][-1]
        print(f"{name:28} {last['step']:6d} {last['seconds']:8.0f} {100 * last['mask_accuracy']:9.1f}% "
              f"{100 * last['unigram_baseline']:7.1f}% {last['mask_accuracy'] / last['unigram_baseline']:6.2f}")


if __name__ == "__main__":
    main(*sys.argv[1:4])
