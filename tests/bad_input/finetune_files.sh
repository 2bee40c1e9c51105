#!/usr/bin/env bash
# Fine-tuning files through `loom run` and `loom eval`: GLUE TSV and JSONL (a label the task does
# not have, a row short of columns, GLUE's unlabelled test layout, a score that is no number, a
# broken JSON line), a dev file listing its labels in another order or fewer of them (evaluated
# by name with the training classes), rows longer than the model's positions, and SQuAD JSON (a
# fractional answer_start, a duplicate id, a field of the wrong type, answers not where they
# point). Each malformed file: exit 2, the file and its line or JSON path named, nothing trained;
# the fixtures stay byte for byte as they were.
# Usage: finetune_files.sh LOOM SOURCE_DIR
set -euo pipefail
loom=$1
src=$2
source "$(dirname "$0")/lib.sh"
malformed=$glue/malformed
snapshot "$glue"

runs=0
# refused CODE REGEX RECIPE [--set ...]: `loom run` is refused before it trains.
refused() {
  local code=$1 pattern=$2 recipe=$3
  shift 3
  runs=$((runs + 1))
  expect_refusal "$code" "$pattern" -- "$loom" run "$recipe" --set "run.name=r$runs" "$@" --quiet
  [ ! -e "$work/runs/r$runs/checkpoints" ] || fail "refused run r$runs trained: $(ls "$work/runs/r$runs/checkpoints")"
}

# --- GLUE tasks: each malformed fixture names its file and line ---
classifier_recipe glue
for case in "mrpc|mrpc_bad_label.tsv|:3: label 'yes' is not one of task \"mrpc\"'s labels (0, 1)" \
            "mrpc|mrpc_short_line.tsv|:3: has 3 tab-separated columns, task \"mrpc\" needs 5" \
            "mrpc|mrpc_glue_test.tsv|:1: the header has no 'Quality' column, which task \"mrpc\" reads" \
            "mnli|mnli_unknown_label.tsv|:2: label '-' is not one of task \"mnli\"'s labels" \
            "sst-2|sst2_header_only.tsv|: no examples after the header" \
            "sts-b|stsb_out_of_range.tsv|:2: score 5.500 is outside [0, 5]" \
            "sts-b|stsb_not_a_number.tsv|:3: score 'high' is not a number" \
            "cola|cola_glue_test.tsv|:1: has 2 tab-separated columns, task \"cola\" needs 4"; do
  IFS='|' read -r task file message <<<"$case"
  refused 2 "$(lit "$malformed/$file$message")" "$work/glue.toml" --set "data.task=$task" \
    --set "data.file=$malformed/$file" --set "eval_data.task=$task" --set "eval_data.file=$malformed/$file"
done
# The same file as the evaluation split of `loom eval`: the same message, before any checkpoint is read.
expect_refusal 2 "$(lit "$malformed/cola_glue_test.tsv:1: has 2 tab-separated columns")" -- "$loom" eval "$work/glue.toml" \
  --set eval_data.task=cola --set "eval_data.file=$malformed/cola_glue_test.tsv" --checkpoint "$work/none"
refused 2 "$(lit "$work/none.tsv: cannot open (data.file)")" "$work/glue.toml" --set "data.file=$work/none.tsv"
refused 2 "$(lit "$work: is a folder, not a data file (data.file)")" "$work/glue.toml" --set "data.file=$work"

# --- Rows longer than the model's 64 positions: refused by the recipe check, before training ---
long=$(printf 'word %.0s' $(seq 1 200))
{ head -3 "$glue/mrpc/dev.tsv"; printf '1\t9\t9\t%s\t%s\n' "$long" "$long"; } > "$work/long-dev.tsv"
refused 2 "$(lit "--set eval_data.max_seq_length=128: eval_data.max_seq_length: 128 is longer than the model's max_position_embeddings = 64")" \
  "$work/glue.toml" --set "eval_data.file=$work/long-dev.tsv" --set eval_data.max_seq_length=128
[ ! -e "$work/runs/r$runs" ] || fail "a recipe refused by its check made its run directory"

# --- JSONL ---
classifier_recipe jsonl
sed -i '/^task = /d' "$work/jsonl.toml"
jsonl() { printf '{"text": "the cat", "label": "a"}\n%s\n' "$2" > "$work/$1.jsonl"; }
jsonl broken '{"text": "the dog", "label": '
jsonl text-type '{"text": 5, "label": "b"}'
jsonl label-type '{"text": "the dog", "label": 1.5}'
refused 2 "$(lit "$work/broken.jsonl:2: not valid JSON at column 30: syntax error")" "$work/jsonl.toml" \
  --set "data.file=$work/broken.jsonl" --set "eval_data.file=$work/broken.jsonl"
refused 2 "$(lit "$work/text-type.jsonl:2: expected an object with a string \"text\"")" "$work/jsonl.toml" \
  --set "data.file=$work/text-type.jsonl" --set "eval_data.file=$work/text-type.jsonl"
refused 2 "$(lit "$work/label-type.jsonl:2: \"label\" must be a string or an integer")" "$work/jsonl.toml" \
  --set "data.file=$work/label-type.jsonl" --set "eval_data.file=$work/label-type.jsonl"

# --- One label map per task ---
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
labels_recipe() { # NAME DEV [eval_data lines]: three classes, no GLUE task, 6 steps
  { recipe_head "$1"; cat <<TOML; } > "$work/$1.toml"
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
labels_recipe labels "$work/dev.tsv"
expect_ok "a three-class training file and a two-class dev file" -- "$loom" run "$work/labels.toml" --quiet
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
# labels option lists them in, and agrees with the run's own evaluation.
labels_recipe swapped "$work/dev.tsv" 'labels = ["1", "0"]'
snapshot "$work/runs/labels"
for recipe in labels swapped; do
  "$loom" eval "$work/$recipe.toml" --checkpoint "$checkpoint" > "$work/$recipe-eval.json" 2> "$work/err" ||
    fail "loom eval ($recipe): $(cat "$work/err")"
done
/usr/bin/python3 - "$work/labels-eval.json" "$work/swapped-eval.json" "$work/labels-run.json" <<'PY' ||
import json, sys
plain, swapped, run = (json.load(open(p)) for p in sys.argv[1:])
assert plain["eval_accuracy"] == swapped["eval_accuracy"] == run, (plain, swapped, run)
PY
  fail "accuracy depends on how the dev split lists its labels: $(cat "$work"/*-eval.json "$work/labels-run.json")"
unchanged "$work/runs/labels"
# A dev label the task does not have stops the run before it trains.
labels_recipe unknown "$work/dev_unknown.tsv"
refused 2 "$(lit "$work/dev_unknown.tsv:4: label '7' is not one of the task's labels [0, 1, 2]")" "$work/unknown.toml"

# --- SQuAD: typed fields, duplicate ids, dropped questions ---
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
f = squad(); f["data"][0]["paragraphs"][0]["context"] = ["not", "text"]; files["squad_context"] = f
f = squad(); f["data"][0]["paragraphs"][0]["qas"][1]["answers"][0]["answer_start"] = -2; files["squad_negative"] = f
files["squad_no_data"] = {"version": "1.1", "articles": []}
for name, content in files.items():
    json.dump(content, open(f"{sys.argv[1]}/{name}.json", "w"))
open(f"{sys.argv[1]}/squad_cut.json", "w").write(json.dumps(squad())[:200])
PY
{ recipe_head squad; cat <<TOML; recipe_tail bert.span-head 1; } > "$work/squad.toml"
[data]
component = "squad"
file = "$work/squad_ok.json"
max_seq_length = 64
doc_stride = 16
max_query_length = 8
batch_size = 8

TOML
squad() { refused 2 "$(lit "$work/$1: $2")" "$work/squad.toml" --set "data.file=$work/$1" "${@:3}"; }
expect_ok "SQuAD training file without problems" -- "$loom" run "$work/squad.toml" --quiet
squad squad_float.json "data[0].paragraphs[0].qas[0].answers[0].answer_start: expected a non-negative integer"
squad squad_negative.json "data[0].paragraphs[0].qas[1].answers[0].answer_start: expected a non-negative integer"
squad squad_duplicate.json "data[0].paragraphs[0].qas[5].id: question id 'q1' is used twice"
squad squad_type.json "data[0].paragraphs[0].qas[2].question: expected a string, got number"
squad squad_context.json "data[0].paragraphs[0].context: expected a string, got array"
squad squad_no_data.json "key 'data': missing or not an array"
squad squad_cut.json "not valid JSON at line 1, column 201"
squad squad_one_dropped.json "dropped 1 of 21 training questions (4.8%)"
expect_ok "the same file with max_dropped_fraction = 0.05" -- "$loom" run "$work/squad.toml" --set run.name=allowed \
  --set "data.file=$work/squad_one_dropped.json" --set data.max_dropped_fraction=0.05 --quiet

unchanged "$glue"
finish
