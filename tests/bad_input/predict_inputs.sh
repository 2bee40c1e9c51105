#!/usr/bin/env bash
# The files `loom predict` and `loom score squad` read besides a checkpoint: texts (TSV, JSONL),
# questions (--question/--context, JSONL, SQuAD JSON), a SQuAD dataset and its predictions. Each
# malformed, missing or misdirected one (a folder) is refused with exit 2 and a message naming the
# file and the line, key or question; an output written before stays as it was.
# Data: the GLUE and SQuAD fixtures, checkpoints of two training steps (no download).
# Usage: predict_inputs.sh LOOM SOURCE_DIR
set -euo pipefail
loom=$1
src=$2
source "$(dirname "$0")/lib.sh"
squad=$src/tests/fixtures/squad

classifier_recipe mrpc
expect_ok "training mrpc" -- "$loom" run "$work/mrpc.toml" --quiet
checkpoint=$work/runs/mrpc/checkpoints/step-000002
predict() { "$loom" predict --checkpoint "$checkpoint" --input "$work/$1" --output "$work/predictions.tsv" "${@:2}"; }
printf 'text\ttext_pair\nthe cat sat .\ta dog ran .\n' > "$work/pairs.tsv"
expect_ok "predict on a valid file" -- predict pairs.tsv
snapshot "$work/predictions.tsv" "$squad"

# --- Texts to classify ---
printf '{"text": "the cat"}\n{"text": \n' > "$work/broken.jsonl"
printf '{"text": 5}\n' > "$work/number.jsonl"
printf '[1, 2]\n' > "$work/array.jsonl"
printf '{"text": "the cat", "text_pair": 7}\n' > "$work/pair.jsonl"
expect_refusal 2 "$(lit "$work/broken.jsonl:2: expected a JSON object with a string \"text\"")" -- predict broken.jsonl
expect_refusal 2 "$(lit "$work/number.jsonl:1: expected a JSON object with a string \"text\"")" -- predict number.jsonl
expect_refusal 2 "$(lit "$work/array.jsonl:1: expected a JSON object with a string \"text\"")" -- predict array.jsonl
expect_refusal 2 "$(lit "$work/pair.jsonl:1: \"text_pair\" must be a string")" -- predict pair.jsonl
printf 'label\ttext\n0\n' > "$work/no-text.tsv"
expect_refusal 2 "$(lit "$work/no-text.tsv:2: no column 2")" -- predict no-text.tsv
expect_refusal 2 "$(lit "$work/none.tsv: cannot be read (--input)")" -- predict none.tsv
# A folder opens as an empty stream: it printed a header and no prediction, exit 0.
expect_refusal 2 "$(lit "$work/runs: is a folder, not a file of texts (--input)")" -- predict runs
expect_refusal 2 "$(lit "--input is required")" -- "$loom" predict --checkpoint "$checkpoint"
# The default 128 is capped at the model's 64 positions (the valid run above); a length the user
# asks for above them was capped too, silently cutting every text to 64 tokens.
expect_refusal 2 "$(lit "--max-seq-length 65 is above the 64 positions of $checkpoint/config.json")" \
  -- predict pairs.tsv --max-seq-length 65

# --- Questions for a span checkpoint ---
span_recipe squad
expect_ok "training the span head" -- "$loom" run "$work/squad.toml" --quiet
span=$work/runs/squad/checkpoints/step-000002
ask() { "$loom" predict --checkpoint "$span" --max-seq-length 64 --max-query-length 16 "$@"; }
printf '{"question": "who ?"}\n' > "$work/no-context.jsonl"
printf '{"question": "who", "context": \n' > "$work/broken-question.jsonl"
: > "$work/no-questions.jsonl"
printf '{"data": 5}\n' > "$work/not-squad.json"
expect_refusal 2 "$(lit "--question and --context go together")" -- ask --question "who ?"
expect_refusal 2 "$(lit "--max-seq-length 65 is above the 64 positions of $span/config.json")" \
  -- "$loom" predict --checkpoint "$span" --question "who ?" --context "the cat ." --max-seq-length 65
expect_refusal 2 "$(lit "$work/no-context.jsonl:1: expected a JSON object with string \"question\" and \"context\"")" \
  -- ask --input "$work/no-context.jsonl"
expect_refusal 2 "$(lit "$work/broken-question.jsonl:1: expected a JSON object")" -- ask --input "$work/broken-question.jsonl"
# Named itself, not the temporary SQuAD file the questions are handed over in.
expect_refusal 2 "$(lit "$work/no-questions.jsonl: no questions")" -- ask --input "$work/no-questions.jsonl"
expect_refusal 2 "$(lit "$work/not-squad.json: key 'data': missing or not an array")" -- ask --input "$work/not-squad.json"
expect_refusal 2 "$(lit "$work/runs: is a folder")" -- ask --input "$work/runs"

# --- loom score squad: the dataset and the predictions ---
score() { "$loom" score squad "$@"; }
printf '{"q1": "x",' > "$work/cut.json"
expect_refusal 2 "$(lit "$work/cut.json: the predictions file is not valid JSON at line 1, column 12")" \
  -- score "$squad/v1.1-dev.json" "$work/cut.json"
/usr/bin/python3 - "$squad" "$work" <<'PY'
import json, sys
squad, work = sys.argv[1:]
predictions = json.load(open(f"{squad}/v2.0-predictions.json"))
del predictions["no-wrong"]
json.dump(predictions, open(f"{work}/partial.json", "w"))
predictions = json.load(open(f"{squad}/v1.1-predictions.json"))
predictions[next(iter(predictions))] = 5
json.dump(predictions, open(f"{work}/number.json", "w"))
json.dump([1, 2], open(f"{work}/array.json", "w"))
json.dump({"version": "1.1"}, open(f"{work}/no-data.json", "w"))
PY
expect_refusal 2 "$(lit "no prediction for question \"no-wrong\"")" -- score "$squad/v2.0-dev.json" "$work/partial.json"
expect_refusal 2 "$(lit "$work/number.json: the prediction of question \"article-inside-word\" is a number; expected a string")" \
  -- score "$squad/v1.1-dev.json" "$work/number.json"
expect_refusal 2 "$(lit "$work/array.json: the predictions file is a JSON array; expected an object")" \
  -- score "$squad/v1.1-dev.json" "$work/array.json"
expect_refusal 2 "$(lit "$work/no-data.json: top level: key \"data\" is missing")" \
  -- score "$work/no-data.json" "$squad/v1.1-predictions.json"
expect_refusal 2 "$(lit "$work/absent.json: cannot open")" -- score "$squad/v1.1-dev.json" "$work/absent.json"
# A folder failed in the C++ library's words ("basic_filebuf::underflow"), exit 1.
expect_refusal 2 "$(lit "$work/runs: is a folder, not the SQuAD file")" -- score "$work/runs" "$squad/v1.1-predictions.json"

unchanged "$work/predictions.tsv" "$squad"
finish
