"""scripts/quickstart_report.py on synthetic run directories: the summary has every key issue 14
names with the right values (means over seeds, the last phase-1 evaluation), report.png is a PNG
of the expected size, and a missing run is a clear error. Usage: quickstart_report_test.py SOURCE_DIR"""
import json
import pathlib
import subprocess
import sys
import tempfile

src = pathlib.Path(sys.argv[1])
script = src / "scripts" / "quickstart_report.py"


def write_run(runs, name, records):
    run = runs / name
    run.mkdir(parents=True)
    (run / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))


def mlm_eval(step, mask_accuracy):
    return {"type": "eval", "step": step, "eval_mlm_loss": 6.0, "eval_mlm_accuracy": 0.15,
            "eval_nsp_accuracy": 0.7, "eval_mlm_mask_accuracy": mask_accuracy, "eval_mlm_mask_loss": 6.5,
            "eval_mlm_kept_accuracy": 0.9, "eval_mlm_kept_loss": 0.6, "eval_mlm_random_accuracy": 0.03,
            "eval_mlm_random_loss": 7.3, "eval_mlm_unigram_baseline": 0.0625}


with tempfile.TemporaryDirectory() as tmp:
    runs = pathlib.Path(tmp)
    write_run(runs, "quickstart-phase1",
              [{"type": "train", "step": s, "loss": 9 - s / 100, "mlm_loss": 8 - s / 100} for s in (50, 100, 150)]
              + [mlm_eval(100, 0.07), mlm_eval(150, 0.125)])
    write_run(runs, "quickstart-spam", [{"type": "eval", "step": 9, "eval_accuracy": 0.96, "eval_f1": 0.94}])
    write_run(runs, "quickstart-spam-scratch", [{"type": "eval", "step": 9, "eval_accuracy": 0.97, "eval_f1": 0.95}])
    for seed, (pre, scratch) in enumerate(((0.9, 0.7), (0.8, 0.7), (0.7, 0.7)), start=1):
        write_run(runs, f"quickstart-spam-lowres-pretrained-seed{seed}",
                  [{"type": "eval", "step": 5, "eval_accuracy": pre, "eval_f1": pre - 0.1}])
        write_run(runs, f"quickstart-spam-lowres-scratch-seed{seed}",
                  [{"type": "eval", "step": 5, "eval_accuracy": scratch, "eval_f1": 0.0}])
    out = subprocess.run([sys.executable, script, str(runs), '{"phase1": 12}', "ckpt"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "[MASK] accuracy is 2.00x" in out.stdout, out.stdout
    summary = json.loads((runs / "quickstart" / "summary.json").read_text())
    expected = {"heldout_mask_accuracy": 0.125, "heldout_kept_accuracy": 0.9, "heldout_random_accuracy": 0.03,
                "heldout_unigram_baseline": 0.0625, "spam_lowres_accuracy_pretrained": 0.8,
                "spam_lowres_accuracy_scratch": 0.7, "spam_lowres_f1_pretrained": 0.7,
                "spam_lowres_f1_scratch": 0.0, "spam_accuracy_pretrained": 0.96, "spam_f1_scratch": 0.95,
                "heldout_mlm_loss": 6.0, "heldout_nsp_accuracy": 0.7}
    for key, value in expected.items():
        assert abs(summary[key] - value) < 1e-12, (key, summary[key], value)
    assert summary["stage_seconds"] == {"phase1": 12} and summary["phase1_checkpoint"] == "ckpt"
    png = (runs / "quickstart" / "report.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "report.png is not a PNG"
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert (width, height) == (1600, 480), (width, height)

    # A missing low-resource run names what is missing.
    for path in runs.glob("quickstart-spam-lowres-scratch-seed*"):
        (path / "metrics.jsonl").unlink()
    out = subprocess.run([sys.executable, script, str(runs), "{}", "ckpt"], capture_output=True, text=True)
    assert out.returncode != 0 and "quickstart-spam-lowres-scratch-seed*" in out.stderr, out.stderr
print("quickstart report: all passed")
