#!/usr/bin/env bash
# A BERT pre-training trajectory unpadded against padded: 100 steps of micro-BERT on real text
# (128-token rows, most of them aiming shorter: short_seq_prob 0.6), dropout off, once with `[model] unpadded =
# true` and once with false; every step's loss agrees within 1e-5 relative (the same sequences, the
# same mathematics; only the order of floating-point sums differs). `loom bench --json` confirms the
# batches have padding and the unpadded run packs them, so the check cannot pass by running padded
# twice.
# Usage: unpadded_trajectory_test.sh LOOM SOURCE_DIR
set -uo pipefail
loom=$1
src=$2
source "$(dirname "$0")/train_fixture.sh"

# The fixture's 12 addresses again, in 128-token rows most of which aim shorter (short_seq_prob 0.6).
"$loom" prep pretraining --vocab "$vocab" --input "$work/raw-12" --output "$work/short-shards" --max-seq-length 128 \
  --max-predictions 20 --dupe-factor 1 --shards 2 --seed 7 --heldout-fraction 0.2 --short-seq-prob 0.6 \
  > "$work/short-prep.log" 2>&1 || { cat "$work/short-prep.log"; exit 1; }
jq '.hidden_dropout_prob = 0 | .attention_probs_dropout_prob = 0' "$fixtures/micro-bert.json" > "$work/no-dropout.json"
for layout in unpadded padded; do
  write_recipe "$layout" 100 1 8
  sed -i "s|^config = .*|config = \"$work/no-dropout.json\"|; s|^\\[model\\]\$|[model]\\nunpadded = $([ $layout = unpadded ] && echo true || echo false)|; s|$work/shards/|$work/short-shards/|;s|^every = 10|every = 0|; s|^eval_every = 20|eval_every = 0|" "$work/$layout.toml"
  "$loom" run "$work/$layout.toml" > "$work/$layout.log" 2>&1 || { tail -5 "$work/$layout.log"; fail "loom run ($layout)"; }
done
"$loom" bench "$work/unpadded.toml" --steps 30 --warmup 0 --json > "$work/bench.json" 2> "$work/bench.err" ||
  { cat "$work/bench.err"; fail "loom bench"; }
jq -e '.unpadded == true and .padding_share > 0.05' "$work/bench.json" > /dev/null ||
  fail "the unpadded recipe did not run packed batches with padding: $(jq -c '{unpadded, padding_share}' "$work/bench.json")"
[ "$(losses "$work/runs/unpadded/metrics.jsonl" | wc -l)" -eq 100 ] || fail "the unpadded run logged no 100 steps"
same_losses "$work/runs/unpadded/metrics.jsonl" "$work/runs/padded/metrics.jsonl" 1e-5 "100 steps unpadded against padded"

if [ $failures -ne 0 ]; then echo "$failures failed"; exit 1; fi
echo "unpadded trajectory: all passed"
