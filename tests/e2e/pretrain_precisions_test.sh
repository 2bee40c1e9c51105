#!/usr/bin/env bash
# Short pre-training on real text (State of the Union + Moby-Dick, scripts/fetch-data) with the
# shipped quickstart phase-1 recipe, shortened by --set, once per precision policy:
#   - fp32: the held-out MLM loss ends well below ln(30522) = 10.33 (random init), under 7.5;
#   - bf16-mixed and fp16-mixed: final losses (held-out MLM loss, held-out total loss, mean
#     training loss of the last log interval) within 3% of fp32's on the same run;
#   - fp16-mixed: the dynamic loss scaler ran (loss_scale reported, at least one value logged).
# Usage: pretrain_precisions_test.sh LOOM SOURCE_DIR [STEPS]. Exit 77 (CTest: skipped) only when
# the corpora cannot be fetched and are not cached.
set -uo pipefail
loom=$1
src=$2
steps=${3:-300}
work=$(mktemp -d /tmp/loom-precisions-test-XXXXXX)
trap 'rm -rf "$work"' EXIT
cd "$src" || exit 1
if ! scripts/fetch-data > "$work/fetch.log" 2>&1; then
  if [ ! -d data/raw/sotu ]; then
    echo "SKIP: scripts/fetch-data failed and data/raw is absent:"; tail -5 "$work/fetch.log"; exit 77
  fi
fi
"$loom" prep pretraining --vocab data/vocab/bert-base-uncased.txt --input data/raw --output "$work/shards" \
  --max-seq-length 128 --max-predictions 20 --dupe-factor 1 --seed 5 > "$work/prep.log" 2>&1 \
  || { cat "$work/prep.log"; exit 1; }

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
log_every=25
for precision in fp32 bf16-mixed fp16-mixed; do
  start=$(date +%s)
  if ! "$loom" run configs/quickstart/pretrain-phase1.toml \
      --set run.name="$precision" --set run.output_dir="$work/runs" --set precision.component="$precision" \
      --set tokenizer.vocab=data/vocab/bert-base-uncased.txt --set model.config=../models/bert-tiny.json \
      --set data.files="$work/shards/training_*.hdf5" --set eval_data.files="$work/shards/heldout_*.hdf5" \
      --set data.batch_size=32 --set train.steps="$steps" --set train.log_every=$log_every \
      --set train.eval_every="$steps" --set train.eval_batches=8 --set checkpoint.every="$steps" \
      > "$work/$precision.log" 2>&1; then
    tail -20 "$work/$precision.log"; fail "$precision run"; continue
  fi
  echo "$precision: $steps steps in $(( $(date +%s) - start )) s"
done
[ $failures = 0 ] || exit 1

/usr/bin/python3 - "$work/runs" "$log_every" <<'PY'
import json, math, sys
runs, errors = sys.argv[1], []
def records(name):
    rows = [json.loads(line) for line in open(f"{runs}/{name}/metrics.jsonl")]
    return [r for r in rows if r["type"] == "train"], [r for r in rows if r["type"] == "eval"]
final = {}
for name in ("fp32", "bf16-mixed", "fp16-mixed"):
    train, evals = records(name)
    final[name] = {"heldout_mlm_loss": evals[-1]["eval_mlm_loss"], "heldout_loss": evals[-1]["eval_loss"],
                   "train_loss": train[-1]["loss"], "loss_scale": train[-1]["loss_scale"],
                   "skipped_steps": train[-1]["skipped_steps"], "first_train_loss": train[0]["loss"]}
    print(name, json.dumps(final[name]))
base = final["fp32"]
ln_vocab = math.log(30522)
if not base["heldout_mlm_loss"] < 7.5:
    errors.append(f"fp32 held-out MLM loss {base['heldout_mlm_loss']:.3f} is not below 7.5 (ln V = {ln_vocab:.2f})")
for name in ("bf16-mixed", "fp16-mixed"):
    for key in ("heldout_mlm_loss", "heldout_loss", "train_loss"):
        rel = abs(final[name][key] - base[key]) / base[key]
        print(f"{name} {key}: {final[name][key]:.4f} vs fp32 {base[key]:.4f} ({100 * rel:.2f}%)")
        if not rel <= 0.03:
            errors.append(f"{name} {key} differs from fp32 by {100 * rel:.2f}% (limit 3%)")
if not final["fp16-mixed"]["loss_scale"] > 1:
    errors.append(f"fp16-mixed reports loss scale {final['fp16-mixed']['loss_scale']} (dynamic scaler not in use?)")
if final["bf16-mixed"]["loss_scale"] != 1 or final["fp32"]["loss_scale"] != 1:
    errors.append("fp32 / bf16-mixed must not scale the loss")
if errors:
    print("FAIL: " + "; ".join(errors)); sys.exit(1)
PY
