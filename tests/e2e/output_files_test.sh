#!/usr/bin/env bash
# Every file Loom writes is checked through its close: an output it cannot write — a folder that
# does not exist, a place that takes no files, a full device — ends the command with a non-zero
# exit code and a message naming the path, never exit 0 with nothing written; and a written file
# is complete or absent, never half there. Standard output is such a file too: `loom predict`,
# `loom score`, `loom tokenize` and `loom eval` printing into /dev/full fail naming it.
# Usage: output_files_test.sh LOOM SOURCE_DIR
set -uo pipefail
loom=$1
src=$2
glue=$src/tests/fixtures/glue
squad=$src/tests/fixtures/squad
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# expect_failure WHAT TEXT COMMAND...: COMMAND exits non-zero and its stderr contains TEXT.
expect_failure() {
  local what=$1 text=$2; shift 2
  "$@" > /dev/null 2> "$work/err"
  local code=$?
  [ $code -ne 0 ] || fail "$what: exit code 0"
  grep -qF -- "$text" "$work/err" || fail "$what: the message does not say '$text': $(cat "$work/err")"
}
# The same with standard output sent to /dev/full.
expect_stdout_failure() {
  local what=$1; shift
  "$@" > /dev/full 2> "$work/err"
  local code=$?
  [ $code -eq 1 ] || fail "$what into /dev/full: exit code $code, expected 1: $(cat "$work/err")"
  grep -qF "error: standard output: write failed" "$work/err" || fail "$what into /dev/full: $(cat "$work/err")"
}

# A classifier checkpoint to predict with: SST-2 fixtures, two steps of the tiny model.
sed -e '/^initial_scale/d' -e 's/^component = "fp16-mixed"/component = "fp32"/' \
    -e 's/^init_from = .*/init_from = ""/' "$src/configs/finetune/glue-sst2.toml" > "$work/sst2.toml"
"$loom" run "$work/sst2.toml" --set "model.config=$glue/tiny-bert.json" --set "tokenizer.vocab=$glue/vocab.txt" \
  --set "data.file=$glue/sst-2/train.tsv" --set "eval_data.file=$glue/sst-2/dev.tsv" \
  --set "run.output_dir=$work/runs" --set train.steps=2 --set train.grad_accumulation=1 --set backend.threads=1 \
  --quiet > "$work/run.log" 2>&1 || { cat "$work/run.log"; exit 1; }
checkpoint=$(ls -d "$work"/runs/*/checkpoints/step-000002)
printf 'text\nthe film is funny\nthe plot is dull\n' > "$work/texts.tsv"
predict=("$loom" predict --checkpoint "$checkpoint" --input "$work/texts.tsv")

# --output: written whole, through a temporary file renamed into place.
"${predict[@]}" --output "$work/predictions.tsv" 2> "$work/err" || fail "predict --output: $(cat "$work/err")"
[ "$(wc -l < "$work/predictions.tsv")" -eq 3 ] || fail "predict --output wrote $(wc -l < "$work/predictions.tsv") lines, expected a header and 2"
[ -z "$(ls -A "$work" | grep '\.tmp-')" ] || fail "a temporary file was left: $(ls -A "$work")"
"${predict[@]}" --output "$work/predictions.jsonl" 2> "$work/err" || fail "predict --output .jsonl: $(cat "$work/err")"
[ "$(wc -l < "$work/predictions.jsonl")" -eq 2 ] || fail "predict --output .jsonl: not 2 lines"

# --output that cannot be written: the path named, nothing left behind, an existing file untouched.
expect_failure "predict into a missing folder" "$work/no-such-folder/p.tsv: cannot be written: the folder $work/no-such-folder does not exist" \
  "${predict[@]}" --output "$work/no-such-folder/p.tsv"
[ ! -e "$work/no-such-folder" ] || fail "predict created the missing folder"
expect_failure "predict into /dev/full" "/dev/full: write failed: No space left on device" \
  "${predict[@]}" --output /dev/full
expect_failure "predict into /proc" "/proc/loom-predictions.tsv: cannot be written" \
  "${predict[@]}" --output /proc/loom-predictions.tsv
mkdir "$work/a-folder"
expect_failure "predict onto a folder" "$work/a-folder: cannot be written: it is a folder" \
  "${predict[@]}" --output "$work/a-folder"
if [ "$(id -u)" -ne 0 ]; then  # root writes into read-only folders
  mkdir "$work/read-only" && chmod 555 "$work/read-only"
  expect_failure "predict into a read-only folder" "$work/read-only/p.tsv: cannot be written" \
    "${predict[@]}" --output "$work/read-only/p.tsv"
fi

# Standard output into /dev/full.
expect_stdout_failure "predict" "${predict[@]}"
expect_stdout_failure "score squad" "$loom" score squad "$squad/v1.1-dev.json" "$squad/v1.1-predictions.json"
expect_stdout_failure "eval" "$loom" eval "$work/sst2.toml" --set "model.config=$glue/tiny-bert.json" \
  --set "tokenizer.vocab=$glue/vocab.txt" --set "data.file=$glue/sst-2/train.tsv" \
  --set "eval_data.file=$glue/sst-2/dev.tsv" --set "run.output_dir=$work/runs" --checkpoint "$checkpoint"
echo "the film is funny" > "$work/line.txt"
expect_stdout_failure "tokenize" "$loom" tokenize --vocab "$glue/vocab.txt" < "$work/line.txt"
expect_stdout_failure "plugins" "$loom" plugins
# ... and a working standard output still exits 0.
"$loom" tokenize --vocab "$glue/vocab.txt" < "$work/line.txt" > /dev/null || fail "tokenize into /dev/null failed"

# vocab train --output: the same checks as every file.
expect_failure "vocab train into /dev/full" "/dev/full: write failed: No space left on device" \
  "$loom" vocab train --input "$glue/sst-2/train.tsv" --size 200 --min-frequency 1 --output /dev/full
expect_failure "vocab train into a missing folder" "$work/none/vocab.txt: cannot be written" \
  "$loom" vocab train --input "$glue/sst-2/train.tsv" --size 200 --min-frequency 1 --output "$work/none/vocab.txt"

[ $failures -eq 0 ] && echo "outputs: every unwritable path is an error naming it; written files are whole"
exit $((failures > 0))
