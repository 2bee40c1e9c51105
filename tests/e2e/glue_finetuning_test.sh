#!/usr/bin/env bash
# GLUE fine-tuning end to end on the GLUE-layout fixtures (tests/fixtures/glue/), one task per
# metric: MRPC (accuracy, F1), CoLA (Matthews correlation), STS-B (Pearson, Spearman; the
# regression head). Each runs its shipped recipe (configs/finetune/glue-*.toml) with the data paths
# pointed at the fixtures, the fixtures' tiny model trained from scratch in fp32 on the CPU, then
# `loom eval` on the dev file; glue_finetuning_check.py compares every metric with its trivial
# baseline (majority class; constant prediction), checks the run's own eval record and the
# checkpoint's Hugging Face config, and prints the table docs/finetuning.md quotes. The STS-B
# checkpoint also scores two pairs through `loom predict`. Malformed GLUE files are the bad-input
# suite's (tests/bad_input/finetune_files.sh).
# Usage: glue_finetuning_test.sh LOOM SOURCE_DIR
set -uo pipefail
loom=$1
src=$2
fixtures=$src/tests/fixtures/glue
check=$(dirname "$0")/glue_finetuning_check.py
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

/usr/bin/python3 "$fixtures/make_fixtures.py" --check || fail "the fixtures are not what make_fixtures.py writes"

# finetune RECIPE DIR STEPS: the shipped recipe on the fixtures (fp32: fp16 would need a GPU to be
# worth it; init_from empty: from scratch; sequences of the tiny model's 64 positions; batches of 32 at lr 5e-4 with bias correction, which a
# model from scratch needs; one thread, so that a second busy core does not stall OpenMP), trained
# and then evaluated from its checkpoint.
finetune() {
  local name=$1 dir=$2 steps=$3
  sed -e '/^initial_scale/d' -e 's/^component = "fp16-mixed"/component = "fp32"/' \
      -e 's/^init_from = .*/init_from = ""/' "$src/configs/finetune/$name.toml" > "$work/$name.toml"
  local sets=(--set "model.config=$fixtures/tiny-bert.json" --set "tokenizer.vocab=$fixtures/vocab.txt"
              --set "data.file=$fixtures/$dir/train.tsv" --set "eval_data.file=$fixtures/$dir/dev.tsv"
              --set data.max_seq_length=64 --set eval_data.max_seq_length=64
              --set "run.output_dir=$work/runs" --set "train.steps=$steps" --set train.grad_accumulation=1
              --set optimizer.lr=0.0005 --set optimizer.bias_correction=true --set schedule.warmup=0.1
              --set train.log_every=50 --set backend.threads=1)
  local start=$SECONDS
  if ! "$loom" run "$work/$name.toml" "${sets[@]}" --quiet > "$work/$name-run.log" 2>&1; then
    tail -20 "$work/$name-run.log"; fail "$name: loom run"; return
  fi
  local checkpoint
  checkpoint=$work/runs/$name/checkpoints/step-$(printf %06d "$steps")
  if ! "$loom" eval "$work/$name.toml" "${sets[@]}" --checkpoint "$checkpoint" > "$work/$name-eval.json" \
       2> "$work/$name-eval.log"; then
    cat "$work/$name-eval.log"; fail "$name: loom eval"; return
  fi
  echo "$name: trained and evaluated in $((SECONDS - start)) s"
  /usr/bin/python3 "$check" "$name" "$fixtures/$dir/dev.tsv" "$work/$name-eval.json" \
    "$work/runs/$name/metrics.jsonl" "$checkpoint" || fail "$name: metrics"
}

finetune glue-mrpc mrpc 800
finetune glue-cola cola 800
finetune glue-stsb sts-b 400

# The regression checkpoint through `loom predict`: a pair that keeps every content word scores
# well above one that keeps none.
stsb=$work/runs/glue-stsb/checkpoints/step-000400
printf 'text\ttext_pair\n%s\t%s\n%s\t%s\n' \
  "a young man is playing a guitar in the park ." "a young man is playing a guitar in the park ." \
  "a young man is playing a guitar in the park ." "a purple robot is eating a sandwich in the desert ." \
  > "$work/pairs.tsv"
if "$loom" predict --checkpoint "$stsb" --input "$work/pairs.tsv" > "$work/pairs.out" 2> "$work/predict.log"; then
  /usr/bin/python3 - "$work/pairs.out" <<'PY' || fail "loom predict on the STS-B checkpoint"
import sys
lines = open(sys.argv[1]).read().split("\n")
assert lines[0] == "score", f"header {lines[0]!r}, expected 'score'"
same, different = float(lines[1]), float(lines[2])
print(f"loom predict (sts-b): identical pair {same:.2f}, unrelated pair {different:.2f}")
assert same > different + 2.5, "the identical pair should score far above the unrelated one"
PY
else
  cat "$work/predict.log"; fail "loom predict"
fi

# Batches by length, outputs in input order: texts of mixed lengths in batches of 3 (sorted by
# length inside `loom predict`, run unpadded) score as each text alone, padded, in the order given.
printf 'text\ttext_pair\n' > "$work/mixed.tsv"
for pair in "a man plays .|a man plays a guitar ." \
  "a young man is playing a guitar in the park on a sunny afternoon with friends .|a man plays ." \
  "dogs run .|cats sleep ." "a woman is slicing an onion .|a woman is cutting an onion into pieces ." \
  "the sky .|the sky is blue and the clouds are white over the quiet town near the sea ." \
  "two kids kick a ball .|two children play football ." "rain .|rain ."; do
  printf '%s\t%s\n' "${pair%%|*}" "${pair#*|}" >> "$work/mixed.tsv"
done
"$loom" predict --checkpoint "$stsb" --input "$work/mixed.tsv" --batch-size 3 > "$work/mixed.out" 2>> "$work/predict.log" ||
  fail "loom predict --batch-size 3"
: > "$work/alone.out"
tail -n +2 "$work/mixed.tsv" | while IFS= read -r line; do
  printf 'text\ttext_pair\n%s\n' "$line" > "$work/one.tsv"
  "$loom" predict --checkpoint "$stsb" --input "$work/one.tsv" --batch-size 1 --padded | tail -1 >> "$work/alone.out"
done
/usr/bin/python3 - "$work/mixed.out" "$work/alone.out" <<'PY' || fail "loom predict: batched by length, out of input order"
import sys
batched = [float(x) for x in open(sys.argv[1]).read().split()[1:]]
alone = [float(x) for x in open(sys.argv[2]).read().split()]
assert len(batched) == len(alone) == 7, (batched, alone)
worst = max(abs(a - b) for a, b in zip(batched, alone))
print(f"loom predict: 7 texts batched by length match each alone within {worst:.2g}")
assert worst < 1e-4, (batched, alone)
PY

[ $failures -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "glue fine-tuning: all checks passed"
