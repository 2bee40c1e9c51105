#!/usr/bin/env bash
# Batches by token budget end to end with `loom run` on real text: a micro-BERT pre-trains with
# `[data] batch_tokens` (micro-batches of varying row counts, each instance at most once per
# epoch), a run killed during a checkpoint resumes with identical losses, and a budget combined
# with drop_last is refused naming the key.
# Usage: token_budget_train_test.sh LOOM SOURCE_DIR
set -uo pipefail
loom=$1
src=$2
source "$(dirname "$0")/train_fixture.sh"

# Row cap 16, budget 384 real tokens: sequences of up to 64 tokens give 6 to 16 rows a micro-batch.
budget_recipe() { # name
  write_recipe "$1" 24 2 16
  python3 - "$work/$1.toml" <<'PY'
import sys
path = sys.argv[1]
text = open(path).read()
text = text.replace("batch_size = 16\n", "batch_size = 16\nbatch_tokens = 384\nbatch_tokens_window = 64\n", 1)
text = text.replace('component = "nvlamb"\nlr = 5e-3', 'component = "adamw"\nlr = 3e-3\nweight_decay = 0.01')
open(path, "w").write(text)
PY
}

budget_recipe budget
grep -q 'batch_tokens = 384' "$work/budget.toml" && grep -q 'adamw' "$work/budget.toml" || fail "the token-budget recipe was not written"
mkdir -p "$work/trace"
LOOM_TRACE_INSTANCES="$work/trace" "$loom" run "$work/budget.toml" > "$work/budget.log" 2>&1 ||
  { tail -5 "$work/budget.log"; fail "loom run with batch_tokens"; }
first=$(losses "$work/runs/budget/metrics.jsonl" | head -3 | awk '{ s += $2 } END { print s / NR }')
last=$(losses "$work/runs/budget/metrics.jsonl" | tail -3 | awk '{ s += $2 } END { print s / NR }')
echo "token-budget pre-training: mean loss of the first three steps $first, of the last three $last"
awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a - 0.5) }' || fail "the loss did not fall by 0.5 in 24 steps"
# 24 steps × 2 micro-batches: fewer rows than 16 each (the budget binds), no instance twice in an epoch.
rows=$(wc -l < "$work/trace/rank-0.txt")
echo "token-budget pre-training: $rows rows in 48 micro-batches"
[ "$rows" -gt $((48 * 4)) ] && [ "$rows" -lt $((48 * 16)) ] || fail "$rows rows in 48 micro-batches: the budget did not bind"
repeated=$(sort "$work/trace/rank-0.txt" | uniq -d | wc -l)
[ "$repeated" -eq 0 ] || fail "$repeated instances trained on twice in one epoch"

# Exact resume: the same run killed during its step-20 checkpoint, resumed from step 10.
killed_run_resumes_exactly budget "token budget"

# A budget with drop_last: refused before training, naming the key.
sed 's|name = "budget"|name = "budget-drop"|; s|batch_tokens = 384|batch_tokens = 384\ndrop_last = true|' \
  "$work/budget.toml" > "$work/budget-drop.toml"
"$loom" run "$work/budget-drop.toml" > "$work/drop.log" 2>&1
status=$?
[ $status -eq 2 ] && grep -q 'data.drop_last' "$work/drop.log" ||
  { tail -3 "$work/drop.log"; fail "batch_tokens with drop_last: exit $status, not a refusal naming data.drop_last"; }

if [ $failures -ne 0 ]; then echo "$failures failed"; exit 1; fi
echo "token-budget end-to-end: all passed"
