"""scripts/quickstart_report.py on synthetic run directories: the summary has every key the quickstart
names with the right values (means over seeds, the last phase-1 evaluation), report.png is a PNG
of the expected size, and a missing run is a clear error; on a GPU (device cuda, SQuAD stand-in runs
present) the summary also has the device, the phase-1 model and exact match / F1 of both
initialisations. Usage: quickstart_report_test.py SOURCE_DIR"""
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
    assert summary["device"] == "cpu" and summary["phase1_model"] is None, summary
    assert not any(k.startswith("squad_mentions") for k in summary), "SQuAD figures without SQuAD runs"
    png = (runs / "quickstart" / "report.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "report.png is not a PNG"
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert (width, height) == (1600, 480), (width, height)

    # The GPU quickstart: its device, the checkpoint's model and the SQuAD stand-in's figures.
    checkpoint = runs / "quickstart-phase1" / "checkpoints" / "step-000150"
    checkpoint.mkdir(parents=True)
    (checkpoint / "config.json").write_text(json.dumps({"num_hidden_layers": 4, "hidden_size": 512,
                                                        "num_attention_heads": 8, "vocab_size": 8192}))
    write_run(runs, "quickstart-squad-mentions-pretrained", [{"type": "eval", "step": 9, "eval_exact_match": 61.5,
                                                              "eval_f1": 70.25}])
    write_run(runs, "quickstart-squad-mentions-scratch", [{"type": "eval", "step": 9, "eval_exact_match": 40.0,
                                                           "eval_f1": 50.5}])
    out = subprocess.run([sys.executable, script, str(runs), "{}", str(checkpoint), "cuda"], capture_output=True,
                         text=True)
    assert out.returncode == 0, out.stderr
    summary = json.loads((runs / "quickstart" / "summary.json").read_text())
    assert summary["device"] == "cuda", summary
    assert summary["phase1_model"] == {"num_hidden_layers": 4, "hidden_size": 512, "num_attention_heads": 8,
                                       "vocab_size": 8192}, summary["phase1_model"]
    assert (summary["squad_mentions_exact_match_pretrained"], summary["squad_mentions_f1_pretrained"],
            summary["squad_mentions_exact_match_scratch"], summary["squad_mentions_f1_scratch"]) == (61.5, 70.25, 40.0, 50.5)
    assert "squad-mentions, pre-trained" in out.stdout and "EM 61.5 / F1 70.2" in out.stdout, out.stdout

    # A missing low-resource run names what is missing.
    for path in runs.glob("quickstart-spam-lowres-scratch-seed*"):
        (path / "metrics.jsonl").unlink()
    out = subprocess.run([sys.executable, script, str(runs), "{}", "ckpt"], capture_output=True, text=True)
    assert out.returncode != 0 and "quickstart-spam-lowres-scratch-seed*" in out.stderr, out.stderr
print("quickstart report: all passed")
