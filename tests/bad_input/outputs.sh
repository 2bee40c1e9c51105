#!/usr/bin/env bash
# What `loom predict`, `loom score`, `loom eval`, `loom tokenize`, `loom vocab train` and `loom prep
# pretraining` write, when it cannot be written or is not worth writing:
# - an output that cannot be written (a folder that does not exist, /proc, /dev/full, a folder in
#   the file's place, a file in the folder's place, standard output into /dev/full) ends the
#   command with exit 1 and a message naming the path, never exit 0 with nothing written; a
#   written file is whole (written beside and renamed), and a file written before stays as it was;
# - outputs that are not finite (a checkpoint whose weights hold NaN, its MANIFEST rewritten, as a
#   diverged run would have saved it) end loom predict and loom eval with exit 1 naming the
#   checkpoint, printing and writing no prediction and no metric; for a classifier, a regression
#   head and a span head. The intact checkpoints answer.
# Data: the GLUE fixtures and a few SQuAD questions written here (no download).
# Usage: outputs.sh LOOM SOURCE_DIR
set -euo pipefail
loom=$1
src=$2
source "$(dirname "$0")/lib.sh"
squad=$src/tests/fixtures/squad

# --- A classifier checkpoint (MRPC fixtures, two steps of the tiny model) ---
classifier_recipe mrpc
expect_ok "training mrpc" -- "$loom" run "$work/mrpc.toml" --quiet
checkpoint=$work/runs/mrpc/checkpoints/step-000002
printf 'text\ttext_pair\nstark shares rose .\tstark stock advanced .\nthe cat sat .\ta dog ran .\n' > "$work/pairs.tsv"
predict=("$loom" predict --checkpoint "$checkpoint" --input "$work/pairs.tsv")

# --output: written whole, through a temporary file renamed into place.
expect_ok "predict --output" -- "${predict[@]}" --output "$work/predictions.tsv"
[ "$(wc -l < "$work/predictions.tsv")" -eq 3 ] || fail "predict --output wrote $(wc -l < "$work/predictions.tsv") lines, expected a header and 2"
[ -z "$(ls -A "$work" | grep '\.tmp-')" ] || fail "a temporary file was left: $(ls -A "$work")"
expect_ok "predict --output .jsonl" -- "${predict[@]}" --output "$work/predictions.jsonl"
[ "$(wc -l < "$work/predictions.jsonl")" -eq 2 ] || fail "predict --output .jsonl: not 2 lines"
snapshot "$work/predictions.tsv" "$work/predictions.jsonl"

# --output that cannot be written: the path named, nothing left behind.
expect_refusal 1 "$(lit "$work/no-such-folder/p.tsv: cannot be written: the folder $work/no-such-folder does not exist")" \
  -- "${predict[@]}" --output "$work/no-such-folder/p.tsv"
[ ! -e "$work/no-such-folder" ] || fail "predict created the missing folder"
expect_refusal 1 "$(lit "/dev/full: write failed: No space left on device")" -- "${predict[@]}" --output /dev/full
expect_refusal 1 "$(lit "/proc/loom-predictions.tsv: cannot be written")" -- "${predict[@]}" --output /proc/loom-predictions.tsv
mkdir "$work/a-folder"
expect_refusal 1 "$(lit "$work/a-folder: cannot be written: it is a folder")" -- "${predict[@]}" --output "$work/a-folder"
if [ "$(id -u)" -ne 0 ]; then  # root writes into read-only folders
  mkdir "$work/read-only" && chmod 555 "$work/read-only"
  expect_refusal 1 "$(lit "$work/read-only/p.tsv: cannot be written")" -- "${predict[@]}" --output "$work/read-only/p.tsv"
fi
# A refused input leaves the predictions written before as they were.
printf '{"text": "the cat"}\n{"text": 5}\n' > "$work/bad.jsonl"
expect_refusal 2 "$(lit "$work/bad.jsonl:2: expected a JSON object with a string \"text\"")" \
  -- "$loom" predict --checkpoint "$checkpoint" --input "$work/bad.jsonl" --output "$work/predictions.tsv"

# Standard output into /dev/full: exit 1 naming it (through the close every command checks).
stdout_full() { "$@" > /dev/full; }
expect_refusal 1 "error: standard output: write failed" -- stdout_full "${predict[@]}"
expect_refusal 1 "error: standard output: write failed" \
  -- stdout_full "$loom" score squad "$squad/v1.1-dev.json" "$squad/v1.1-predictions.json"
expect_refusal 1 "error: standard output: write failed" \
  -- stdout_full "$loom" eval "$work/mrpc.toml" --checkpoint "$checkpoint"
echo "the film is funny" > "$work/line.txt"
expect_refusal 1 "error: standard output: write failed" -- sh -c '"$1" tokenize --vocab "$2" < "$3" > /dev/full' \
  tokenize "$loom" "$glue/vocab.txt" "$work/line.txt"
expect_refusal 1 "error: standard output: write failed" -- stdout_full "$loom" plugins
expect_ok "tokenize into /dev/null" -- sh -c '"$1" tokenize --vocab "$2" < "$3" > /dev/null' tokenize "$loom" \
  "$glue/vocab.txt" "$work/line.txt"

# vocab train --output and prep pretraining --output: the same checks as every file.
expect_refusal 1 "$(lit "/dev/full: write failed: No space left on device")" \
  -- "$loom" vocab train --input "$glue/sst-2/train.tsv" --size 200 --min-frequency 1 --output /dev/full
expect_refusal 1 "$(lit "$work/none/vocab.txt: cannot be written")" \
  -- "$loom" vocab train --input "$glue/sst-2/train.tsv" --size 200 --min-frequency 1 --output "$work/none/vocab.txt"
prep() { "$loom" prep pretraining --vocab "$glue/vocab.txt" --input "$glue/sst-2/train.tsv" --output "$1" \
  --max-seq-length 32 --max-predictions 5 --shards 1 --dupe-factor 1 --threads 1; }
expect_refusal 1 "$(lit "$work/predictions.tsv: cannot be written: it is a file, not a folder (--output)")" \
  -- prep "$work/predictions.tsv"
expect_refusal 1 "$(lit "/proc/loom-shards: cannot be written")" -- prep /proc/loom-shards

# --- Outputs that are not finite ---
# poison CHECKPOINT COPY PREFIX...: COPY = CHECKPOINT with every f32 tensor whose name starts with
# a PREFIX set to NaN, and its MANIFEST's sums updated, so only the values are wrong.
poison() {
  cp -r "$1" "$2"
  /usr/bin/python3 - "$2" "${@:3}" <<'PY'
import json, pathlib, struct, sys
directory, prefixes = pathlib.Path(sys.argv[1]), tuple(sys.argv[2:])
path = directory / "model.safetensors"
blob = bytearray(path.read_bytes())
size = struct.unpack("<Q", blob[:8])[0]
header = json.loads(blob[8:8 + size])
poisoned = 0
for name, tensor in header.items():
    if name == "__metadata__" or not name.startswith(prefixes):
        continue
    assert tensor["dtype"] == "F32", tensor
    begin, end = (8 + size + offset for offset in tensor["data_offsets"])
    blob[begin:end] = struct.pack("<f", float("nan")) * ((end - begin) // 4)
    poisoned += 1
assert poisoned > 0, f"no tensor starts with {prefixes}"
path.write_bytes(bytes(blob))
PY
  remanifest "$2"
}
# refused_nonfinite WHAT CHECKPOINT COMMAND...: exit 1, the error starting with the checkpoint and
# saying "not finite", nothing on standard output.
refused_nonfinite() {
  expect_refusal 1 "$(lit "error: $2: the model's").*are not finite" -- "${@:3}"
  [ ! -s "$work/out" ] || fail "$1: printed output for non-finite outputs: $(head -c 300 "$work/out")"
}

# Sequence classification.
poison "$checkpoint" "$work/nan-classifier" classifier.
grep -qi "nan" "$work/predictions.tsv" && fail "the intact checkpoint predicts nan: $(cat "$work/predictions.tsv")"
refused_nonfinite "predict (stdout)" "$work/nan-classifier" "$loom" predict --checkpoint "$work/nan-classifier" --input "$work/pairs.tsv"
grep -qF "text 1 of $work/pairs.tsv" "$work/err" || fail "predict does not name the text: $(cat "$work/err")"
refused_nonfinite "predict --output" "$work/nan-classifier" "$loom" predict --checkpoint "$work/nan-classifier" \
  --input "$work/pairs.tsv" --output "$work/nan.jsonl"
[ ! -e "$work/nan.jsonl" ] || fail "predict --output wrote predictions of non-finite outputs: $(head -c 300 "$work/nan.jsonl")"
refused_nonfinite "predict --output over an earlier file" "$work/nan-classifier" "$loom" predict \
  --checkpoint "$work/nan-classifier" --input "$work/pairs.tsv" --output "$work/predictions.jsonl"
expect_ok "eval on the intact checkpoint" -- "$loom" eval "$work/mrpc.toml" --checkpoint "$checkpoint"
/usr/bin/python3 -c "import json,sys; m=json.load(open(sys.argv[1])); assert isinstance(m['eval_accuracy'], float), m" \
  "$work/out" || fail "eval on the intact checkpoint has no accuracy"
refused_nonfinite "eval" "$work/nan-classifier" "$loom" eval "$work/mrpc.toml" --checkpoint "$work/nan-classifier"
grep -qF "evaluation batches" "$work/err" || fail "eval does not count the batches: $(cat "$work/err")"

# Regression (STS-B fixtures): a NaN score is no score.
classifier_recipe stsb
sed -i -e 's/^task = "mrpc"/task = "sts-b"/' -e "s|$glue/mrpc/train.tsv|$glue/sts-b/train.tsv|" \
  -e "s|$glue/mrpc/dev.tsv|$glue/sts-b/dev.tsv|" "$work/stsb.toml"
expect_ok "training sts-b" -- "$loom" run "$work/stsb.toml" --quiet
poison "$work/runs/stsb/checkpoints/step-000002" "$work/nan-regression" bert.pooler.
refused_nonfinite "predict (regression)" "$work/nan-regression" "$loom" predict --checkpoint "$work/nan-regression" \
  --input "$work/pairs.tsv"
refused_nonfinite "eval (regression)" "$work/nan-regression" "$loom" eval "$work/stsb.toml" --checkpoint "$work/nan-regression"

# Question answering (three SQuAD v1.1 questions).
span_recipe squad
expect_ok "training the span head" -- "$loom" run "$work/squad.toml" --quiet
span=$work/runs/squad/checkpoints/step-000002
poison "$span" "$work/nan-span" qa_outputs.
question=(--question "who rose ?" --context "stark shares rose ." --max-seq-length 64 --max-query-length 16)
expect_ok "predict on the intact span checkpoint" -- "$loom" predict --checkpoint "$span" "${question[@]}"
refused_nonfinite "predict (question answering)" "$work/nan-span" "$loom" predict --checkpoint "$work/nan-span" "${question[@]}"
mkdir -p "$work/squad-eval"
refused_nonfinite "eval (question answering)" "$work/nan-span" "$loom" eval "$work/squad.toml" --set data.mode=eval \
  --checkpoint "$work/nan-span" --output-dir "$work/squad-eval"
[ -z "$(ls "$work/squad-eval")" ] || fail "eval wrote SQuAD predictions of non-finite logits: $(ls "$work/squad-eval")"

unchanged "$work/predictions.tsv" "$work/predictions.jsonl"
finish
