#!/usr/bin/env bash
# Malformed data and checkpoint metadata through the CLI, each refused with its exit code and a
# message naming the file (and line, key or field) instead of training or answering silently wrong:
# - classification: one label map per task — a dev file with fewer classes or its labels listed in
#   another order evaluates with the training classes, by name; an unknown dev label stops
#   `loom run` before training (exit 2, file:line);
# - SQuAD: a fractional answer_start, a duplicate question id, a wrong JSON type (exit 2, file and
#   field), and more dropped training questions than data.max_dropped_fraction allows;
# - pre-training shards: a manifest.json naming another vocabulary (exit 2), dynamic masking with a
#   vocabulary that has no [MASK] (named);
# - checkpoints: state.json with a negative or fractional step (exit 1, metrics.jsonl untouched),
#   config.json with fewer or more layers than the weights (`loom predict` refuses).
# Small fixtures (tests/fixtures/glue: vocabulary and tiny model), a few training steps: a few
# seconds on two cores.
# Usage: bad_data_test.sh LOOM SOURCE_DIR
set -uo pipefail
loom=$1
src=$2
glue=$src/tests/fixtures/glue
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# expect CODE WANT LOG TEXT WHAT: the command's exit code was WANT and its output holds TEXT.
expect() {
  local code=$1 want=$2 log=$3 text=$4 what=$5
  [ "$code" -eq "$want" ] || fail "$what: exit $code, expected $want: $(tail -3 "$log")"
  [ -z "$text" ] || grep -qF -- "$text" "$log" || fail "$what: the message lacks '$text': $(tail -3 "$log")"
}

# --- Classification: one label map per task ------------------------------------------------------
# Training has three classes; the dev file only two, 5 × "0" and 2 × "1" (so accuracy under
# swapped classes would differ: p against 1 − p, never equal with 7 rows).
words=(cat dog boy child bicycle attic acme)
{
  printf 'label\ttext\n'
  for i in $(seq 0 29); do printf '%d\tthe %s and the %s\n' $((i % 3)) "${words[i % 7]}" "${words[(i + 3) % 7]}"; done
} > "$work/train.tsv"
{
  printf 'label\ttext\n'
  for i in 0 0 1 0 1 0 0; do printf '%d\tthe %s\n' "$i" "${words[i + 2]}"; done
} > "$work/dev.tsv"
sed '4s/.*/7\tthe cat/' "$work/dev.tsv" > "$work/dev_unknown.tsv"

classification_recipe() { # NAME DEV [extra eval_data lines]
  cat > "$work/$1.toml" <<TOML
[run]
name = "$1"
seed = 3
output_dir = "$work/runs"

[backend]
component = "cpu"
threads = 1

[tokenizer]
component = "wordpiece"
vocab = "$glue/vocab.txt"

[data]
component = "text-classification"
file = "$work/train.tsv"
max_seq_length = 16
batch_size = 8

[eval_data]
component = "text-classification"
file = "$2"
max_seq_length = 16
batch_size = 8
shuffle = false
${3:-}

[model]
config = "$glue/tiny-bert.json"
blocks = ["bert.embeddings", { block = "bert.encoder-layer", repeat = "num_hidden_layers" }, "bert.classifier-head"]

[optimizer]
component = "adamw"
lr = 1e-3
bias_correction = true

[schedule]
component = "constant"

[train]
steps = 6
log_every = 3

[checkpoint]
every = 0
keep = 1
TOML
}

classification_recipe labels "$work/dev.tsv"
"$loom" run "$work/labels.toml" --quiet > "$work/labels-run.log" 2>&1
expect $? 0 "$work/labels-run.log" "" "loom run with a three-class training file and a two-class dev file"
checkpoint=$work/runs/labels/checkpoints/step-000006
/usr/bin/python3 - "$checkpoint/config.json" "$work/runs/labels/metrics.jsonl" > "$work/labels-run.json" <<'PY' ||
import json, sys
config = json.load(open(sys.argv[1]))
assert config["id2label"] == {"0": "0", "1": "1", "2": "2"}, config["id2label"]
evals = [r for r in map(json.loads, open(sys.argv[2])) if r.get("type") == "eval"]
assert evals and evals[-1]["eval_examples"] == 7, evals
print(json.dumps(evals[-1]["eval_accuracy"]))
PY
  fail "the run's checkpoint or eval record: $(cat "$work/labels-run.json")"
# loom eval numbers the dev classes by the checkpoint's id2label, whatever order the dev split's own
# labels option lists them in; and agrees with the run's own evaluation.
classification_recipe labels-swapped "$work/dev.tsv" 'labels = ["1", "0"]'
for recipe in labels labels-swapped; do
  "$loom" eval "$work/$recipe.toml" --checkpoint "$checkpoint" > "$work/$recipe-eval.json" 2> "$work/$recipe-eval.log"
  expect $? 0 "$work/$recipe-eval.log" "" "loom eval ($recipe)"
done
/usr/bin/python3 - "$work/labels-eval.json" "$work/labels-swapped-eval.json" "$work/labels-run.json" <<'PY' ||
import json, sys
plain, swapped, run = (json.load(open(p)) for p in sys.argv[1:])
assert plain["eval_accuracy"] == swapped["eval_accuracy"] == run, (plain, swapped, run)
PY
  fail "accuracy depends on how the dev split lists its labels: $(cat "$work"/labels*-eval.json "$work/labels-run.json")"
# A dev label the task does not have stops the run before it trains.
classification_recipe unknown "$work/dev_unknown.tsv"
"$loom" run "$work/unknown.toml" --quiet > "$work/unknown.log" 2>&1
expect $? 2 "$work/unknown.log" "dev_unknown.tsv:4: label '7' is not one of the task's labels [0, 1, 2]" \
  "loom run with an unknown dev label"
[ -z "$(ls "$work/runs/unknown/checkpoints" 2> /dev/null)" ] || fail "a refused run wrote checkpoints"

# --- SQuAD: typed fields, duplicate ids, dropped questions -----------------------------------------
/usr/bin/python3 - "$work" <<'PY'
import copy, json, sys
words = ["cat", "dog", "boy", "child", "bicycle", "attic", "acme"]
context, starts = "", []
for i in range(21):
    context += ("" if i == 0 else " ") + "the "
    starts.append(len(context))
    context += words[i % 7] + str(i)
def squad(wrong=0):
    qas = [{"id": f"q{i}", "question": f"which {words[i % 7]} ?",
            "answers": [{"text": words[i % 7] + str(i), "answer_start": starts[(i + 1) % 21 if i < wrong else i]}]}
           for i in range(21)]
    return {"version": "1.1", "data": [{"title": "t", "paragraphs": [{"context": context, "qas": qas}]}]}
files = {"squad_ok": squad(), "squad_one_dropped": squad(1)}
f = squad(); f["data"][0]["paragraphs"][0]["qas"][0]["answers"][0]["answer_start"] = 3.7; files["squad_float"] = f
f = squad(); f["data"][0]["paragraphs"][0]["qas"][5]["id"] = "q1"; files["squad_duplicate"] = f
f = squad(); f["data"][0]["paragraphs"][0]["qas"][2]["question"] = 5; files["squad_type"] = f
for name, content in files.items():
    json.dump(content, open(f"{sys.argv[1]}/{name}.json", "w"))
PY
cat > "$work/squad.toml" <<TOML
[run]
name = "squad"
output_dir = "$work/runs"

[backend]
component = "cpu"
threads = 1

[tokenizer]
component = "wordpiece"
vocab = "$glue/vocab.txt"

[data]
component = "squad"
file = "$work/squad_ok.json"
max_seq_length = 64
doc_stride = 16
max_query_length = 8
batch_size = 8

[model]
config = "$glue/tiny-bert.json"
blocks = ["bert.embeddings", { block = "bert.encoder-layer", repeat = "num_hidden_layers" }, "bert.span-head"]

[optimizer]
component = "adamw"
lr = 1e-3

[schedule]
component = "constant"

[train]
steps = 1
TOML
squad_run() { # NAME FILE [--set ...]: loom run on FILE
  local name=$1 file=$2
  shift 2
  "$loom" run "$work/squad.toml" --set "run.name=$name" --set "data.file=$work/$file" "$@" --quiet > "$work/$name.log" 2>&1
}
squad_run squad-ok squad_ok.json
expect $? 0 "$work/squad-ok.log" "" "SQuAD training file without problems"
squad_run squad-float squad_float.json
expect $? 2 "$work/squad-float.log" \
  "squad_float.json: data[0].paragraphs[0].qas[0].answers[0].answer_start: expected a non-negative integer" \
  "SQuAD answer_start 3.7"
squad_run squad-duplicate squad_duplicate.json
expect $? 2 "$work/squad-duplicate.log" \
  "squad_duplicate.json: data[0].paragraphs[0].qas[5].id: question id 'q1' is used twice" "SQuAD duplicate id"
squad_run squad-type squad_type.json
expect $? 2 "$work/squad-type.log" "squad_type.json: data[0].paragraphs[0].qas[2].question: expected a string, got number" \
  "SQuAD question of the wrong type"
grep -q "json.exception" "$work/squad-type.log" && fail "a JSON library message reached the user: $(cat "$work/squad-type.log")"
squad_run squad-dropped squad_one_dropped.json
expect $? 2 "$work/squad-dropped.log" "squad_one_dropped.json: dropped 1 of 21 training questions (4.8%)" \
  "SQuAD with 1 of 21 answers not where answer_start points"
squad_run squad-allowed squad_one_dropped.json --set data.max_dropped_fraction=0.05
expect $? 0 "$work/squad-allowed.log" "" "the same file with max_dropped_fraction = 0.05"

# --- Pre-training shards: the vocabulary they were prepared with -----------------------------------
mkdir -p "$work/text"
cp "$src/docs/design.md" "$src/docs/data.md" "$work/text/"
"$loom" prep pretraining --vocab "$glue/vocab.txt" --input "$work/text" --output "$work/shards" \
  --max-seq-length 32 --max-predictions 5 --shards 1 --dupe-factor 1 > "$work/prep.log" 2>&1 ||
  fail "loom prep pretraining: $(tail -3 "$work/prep.log")"
sed 's/^attic$/garret/' "$glue/vocab.txt" > "$work/other-vocab.txt"  # same size, another token
sed 's/^\[MASK\]$/[NOTMASK]/' "$glue/vocab.txt" > "$work/no-mask-vocab.txt"
mkdir -p "$work/bare-shards"
cp "$work"/shards/training_*.hdf5 "$work/bare-shards/"  # no manifest.json beside them
cat > "$work/pretrain.toml" <<TOML
[run]
name = "pretrain"
output_dir = "$work/runs"

[backend]
component = "cpu"
threads = 1

[tokenizer]
component = "wordpiece"
vocab = "$glue/vocab.txt"

[data]
component = "pretraining-shards"
files = "$work/shards/training_*.hdf5"
batch_size = 8

[model]
config = "$glue/tiny-bert.json"
blocks = ["bert.embeddings", { block = "bert.encoder-layer", repeat = "num_hidden_layers" }, "bert.pretraining-heads"]

[optimizer]
component = "adamw"
lr = 1e-3

[schedule]
component = "constant"

[train]
steps = 2
TOML
pretrain() { # NAME [--set ...]
  local name=$1
  shift
  "$loom" run "$work/pretrain.toml" --set "run.name=$name" "$@" --quiet > "$work/$name.log" 2>&1
}
pretrain pretrain-ok
expect $? 0 "$work/pretrain-ok.log" "" "pre-training on shards of the run's vocabulary"
pretrain pretrain-other-vocab --set "tokenizer.vocab=$work/other-vocab.txt"
expect $? 2 "$work/pretrain-other-vocab.log" \
  "$work/shards/manifest.json: these shards were prepared with the vocabulary $glue/vocab.txt" \
  "shards prepared with another vocabulary"
grep -qF "but the run's [tokenizer] reads $work/other-vocab.txt" "$work/pretrain-other-vocab.log" ||
  fail "the run's vocabulary is not named: $(cat "$work/pretrain-other-vocab.log")"
pretrain pretrain-no-mask --set "tokenizer.vocab=$work/no-mask-vocab.txt" \
  --set "data.files=$work/bare-shards/training_*.hdf5" --set data.masking=dynamic
expect $? 1 "$work/pretrain-no-mask.log" "the vocabulary $work/no-mask-vocab.txt has no [MASK] token" \
  "dynamic masking without [MASK]"
grep -q "is outside \[0," "$work/pretrain-no-mask.log" && fail "the [MASK] problem surfaced as an id out of range"

# --- Checkpoint metadata ----------------------------------------------------------------------------
# state.json edited (its MANIFEST line updated, so only the values are wrong): the resume is refused
# and metrics.jsonl is left as it was.
metrics_before=$(sha256sum < "$work/runs/labels/metrics.jsonl")
for step in -5 1e23; do
  bad=$work/bad-state-$step
  cp -r "$checkpoint" "$bad"
  sed -i "s/\"step\": 6,/\"step\": $step,/" "$bad/state.json"
  grep -qF "\"step\": $step," "$bad/state.json" || fail "state.json was not edited: $(head -3 "$bad/state.json")"
  sum=$(sha256sum < "$bad/state.json" | cut -d' ' -f1)
  sed -i "s/^[0-9a-f]\{64\}  state.json$/$sum  state.json/" "$bad/MANIFEST"
  "$loom" run "$work/labels.toml" --resume "$bad" --set train.steps=8 --quiet > "$work/resume$step.log" 2>&1
  code=$?
  want=$([ "$step" = -5 ] && echo "step: -5 is negative" || echo "step: 1e+23 is not a whole number")
  expect $code 1 "$work/resume$step.log" "$bad/state.json: $want" "resume from state.json with step $step"
done
[ "$(sha256sum < "$work/runs/labels/metrics.jsonl")" = "$metrics_before" ] || fail "a refused resume changed metrics.jsonl"

# config.json with fewer, then more, layers than model.safetensors holds: loom predict refuses.
printf 'text\nthe cat and the dog\n' > "$work/predict.tsv"
"$loom" predict --checkpoint "$checkpoint" --input "$work/predict.tsv" > "$work/predict.log" 2>&1
expect $? 0 "$work/predict.log" "" "loom predict on the intact checkpoint"
for layers in 1 3; do
  bad=$work/bad-config-$layers
  cp -r "$checkpoint" "$bad"
  sed -i "s/\"num_hidden_layers\": 2/\"num_hidden_layers\": $layers/" "$bad/config.json"
  "$loom" predict --checkpoint "$bad" --input "$work/predict.tsv" > "$work/predict$layers.log" 2>&1
  expect $? 1 "$work/predict$layers.log" \
    "num_hidden_layers = $layers, but the weights hold encoder layers 0–1 (2 layers)" \
    "loom predict with config.json claiming $layers layers"
done

if [ "$failures" -gt 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "bad data and checkpoint metadata: every case refused as expected"
