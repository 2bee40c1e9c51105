#!/usr/bin/env bash
# A checkpoint whose weights hold NaN (a copy of a trained one with tensors overwritten and its
# MANIFEST updated, as a diverged run would have saved it) through `loom predict` and `loom eval`:
# each exits 1 naming the checkpoint and saying the outputs are not finite, and prints or writes no
# predictions and no metrics; the intact checkpoint gives finite answers with exit 0. Covers a
# sequence classifier (TSV, --output), a regression head and a question-answering head.
# Data: the GLUE and SQuAD fixtures (no download).
# Usage: nonfinite_outputs_test.sh LOOM SOURCE_DIR
set -uo pipefail
loom=$1
src=$2
glue=$src/tests/fixtures/glue
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# write_recipe NAME HEAD DATA_TABLE: a tiny model from scratch, 2 steps, fp32, one thread.
write_recipe() {
  cat > "$work/$1.toml" <<TOML
[run]
name = "$1"
seed = 5
output_dir = "$work/runs"

[backend]
component = "cpu"
threads = 1

[tokenizer]
component = "wordpiece"
vocab = "$glue/vocab.txt"

$3

[model]
config = "$glue/tiny-bert.json"
blocks = ["bert.embeddings", { block = "bert.encoder-layer", repeat = "num_hidden_layers" }, "bert.$2"]

[optimizer]
component = "adamw"
lr = 1e-3

[schedule]
component = "constant"

[train]
steps = 2
log_every = 1
TOML
}

# poison CHECKPOINT COPY PREFIX...: COPY = CHECKPOINT with every f32 tensor whose name starts with
# a PREFIX set to NaN, and its MANIFEST's sums updated, so only the values are wrong.
poison() {
  cp -r "$1" "$2"
  /usr/bin/python3 - "$2" "${@:3}" <<'PY'
import hashlib, json, pathlib, struct, sys
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
manifest = directory / "MANIFEST"
lines = []
for line in manifest.read_text().splitlines():
    digest, name = line.split("  ", 1)
    lines.append(f"{hashlib.sha256((directory / name).read_bytes()).hexdigest()}  {name}")
manifest.write_text("\n".join(lines) + "\n")
PY
}

# expect_refused WHAT CHECKPOINT OUTPUT_FILE LOG CODE: exit 1, the error starting with the
# checkpoint and saying "not finite", nothing on stdout (OUTPUT_FILE holds it).
expect_refused() {
  [ "$5" = 1 ] || fail "$1: exit $5, expected 1: $(cat "$4")"
  grep -qF "error: $2: the model's" "$4" && grep -qF "are not finite" "$4" ||
    fail "$1: the error does not name the checkpoint and the non-finite outputs: $(cat "$4")"
  [ ! -s "$3" ] || fail "$1: printed output for non-finite outputs: $(head -c 300 "$3")"
}

# --- sequence classification (MRPC fixtures) ---
write_recipe mrpc classifier-head "[data]
component = \"text-classification\"
task = \"mrpc\"
file = \"$glue/mrpc/train.tsv\"
max_seq_length = 32
batch_size = 8

[eval_data]
component = \"text-classification\"
task = \"mrpc\"
file = \"$glue/mrpc/dev.tsv\"
max_seq_length = 32
batch_size = 8
shuffle = false"
"$loom" run "$work/mrpc.toml" --quiet > "$work/mrpc-run.log" 2>&1 || { cat "$work/mrpc-run.log"; fail "training mrpc"; }
good=$work/runs/mrpc/checkpoints/step-000002
bad=$work/nan-classifier
poison "$good" "$bad" classifier.
printf 'text\ttext_pair\nstark shares rose .\tstark stock advanced .\nthe cat sat .\ta dog ran .\n' > "$work/pairs.tsv"

"$loom" predict --checkpoint "$good" --input "$work/pairs.tsv" > "$work/good.out" 2> "$work/good.log" ||
  fail "predict on the intact checkpoint: $(cat "$work/good.log")"
grep -qi "nan" "$work/good.out" && fail "the intact checkpoint predicts nan: $(cat "$work/good.out")"
[ "$(wc -l < "$work/good.out")" = 3 ] || fail "predict: expected a header and 2 lines: $(cat "$work/good.out")"

"$loom" predict --checkpoint "$bad" --input "$work/pairs.tsv" > "$work/bad.out" 2> "$work/bad.log"
expect_refused "predict (stdout)" "$bad" "$work/bad.out" "$work/bad.log" $?
grep -qF "text 1 of $work/pairs.tsv" "$work/bad.log" || fail "predict does not name the text: $(cat "$work/bad.log")"
"$loom" predict --checkpoint "$bad" --input "$work/pairs.tsv" --output "$work/bad.jsonl" > "$work/bad.out" 2> "$work/bad.log"
expect_refused "predict --output" "$bad" "$work/bad.out" "$work/bad.log" $?
[ ! -s "$work/bad.jsonl" ] || fail "predict --output wrote predictions of non-finite outputs: $(head -c 300 "$work/bad.jsonl")"

"$loom" eval "$work/mrpc.toml" --checkpoint "$good" > "$work/good.json" 2> "$work/good.log" ||
  fail "eval on the intact checkpoint: $(cat "$work/good.log")"
/usr/bin/python3 -c "import json,sys; m=json.load(open(sys.argv[1])); assert isinstance(m['eval_accuracy'], float), m" \
  "$work/good.json" || fail "eval on the intact checkpoint has no accuracy"
"$loom" eval "$work/mrpc.toml" --checkpoint "$bad" > "$work/bad.out" 2> "$work/bad.log"
expect_refused "eval" "$bad" "$work/bad.out" "$work/bad.log" $?
grep -qF "evaluation batches" "$work/bad.log" || fail "eval does not count the batches: $(cat "$work/bad.log")"

# --- regression (STS-B fixtures): a NaN score is no score ---
write_recipe stsb classifier-head "[data]
component = \"text-classification\"
task = \"sts-b\"
file = \"$glue/sts-b/train.tsv\"
max_seq_length = 32
batch_size = 8"
"$loom" run "$work/stsb.toml" --quiet > "$work/stsb-run.log" 2>&1 || { cat "$work/stsb-run.log"; fail "training sts-b"; }
poison "$work/runs/stsb/checkpoints/step-000002" "$work/nan-regression" bert.pooler.
"$loom" predict --checkpoint "$work/nan-regression" --input "$work/pairs.tsv" > "$work/bad.out" 2> "$work/bad.log"
expect_refused "predict (regression)" "$work/nan-regression" "$work/bad.out" "$work/bad.log" $?
"$loom" eval "$work/stsb.toml" --set "data.file=$glue/sts-b/dev.tsv" --checkpoint "$work/nan-regression" \
  > "$work/bad.out" 2> "$work/bad.log"
expect_refused "eval (regression)" "$work/nan-regression" "$work/bad.out" "$work/bad.log" $?

# --- question answering (a few SQuAD v1.1 questions written here) ---
/usr/bin/python3 - "$work/squad.json" <<'PY'
import json, sys
facts = [("stark shares rose two percent last month .", "what rose ?", "stark shares"),
         ("the cat sat on the mat on friday .", "where did the cat sit ?", "on the mat"),
         ("initech stock jumped seven percent .", "how much did initech stock jump ?", "seven percent")]
paragraphs = [{"context": c, "qas": [{"id": f"q{i}", "question": q,
                                      "answers": [{"text": a, "answer_start": c.index(a)}]}]}
              for i, (c, q, a) in enumerate(facts)]
json.dump({"version": "1.1", "data": [{"title": "facts", "paragraphs": paragraphs}]}, open(sys.argv[1], "w"))
PY
write_recipe squad span-head "[data]
component = \"squad\"
file = \"$work/squad.json\"
max_seq_length = 64
doc_stride = 32
max_query_length = 16
batch_size = 8"
if "$loom" run "$work/squad.toml" --quiet > "$work/squad-run.log" 2>&1; then
  squad_good=$work/runs/squad/checkpoints/step-000002
  poison "$squad_good" "$work/nan-span" qa_outputs.
  "$loom" predict --checkpoint "$squad_good" --question "who rose ?" --context "stark shares rose ." \
    --max-seq-length 64 --max-query-length 16 > "$work/good.out" 2> "$work/good.log" || fail "predict on the intact span checkpoint: $(cat "$work/good.log")"
  "$loom" predict --checkpoint "$work/nan-span" --question "who rose ?" --context "stark shares rose ." \
    --max-seq-length 64 --max-query-length 16 > "$work/bad.out" 2> "$work/bad.log"
  expect_refused "predict (question answering)" "$work/nan-span" "$work/bad.out" "$work/bad.log" $?
  mkdir -p "$work/squad-eval"
  "$loom" eval "$work/squad.toml" --set data.mode=eval --checkpoint "$work/nan-span" --output-dir "$work/squad-eval" \
    > "$work/bad.out" 2> "$work/bad.log"
  expect_refused "eval (question answering)" "$work/nan-span" "$work/bad.out" "$work/bad.log" $?
  [ -z "$(ls "$work/squad-eval")" ] || fail "eval wrote SQuAD predictions of non-finite logits: $(ls "$work/squad-eval")"
else
  cat "$work/squad-run.log"; fail "training the span head"
fi

if [ $failures -ne 0 ]; then echo "$failures failed"; exit 1; fi
echo "non-finite outputs: all passed"
