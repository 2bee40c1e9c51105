#!/usr/bin/env bash
# RoBERTa end to end with `loom run` on real text: masked-LM pre-training of a micro RoBERTa
# (WordPiece ids, padding id 0, so positions start at 1), its checkpoint a RoBERTa config naming
# RobertaForMaskedLM with weights under Hugging Face's names (no pooler, no NSP, no tied copies),
# then fine-tuning a RobertaForSequenceClassification from it and `loom predict` on the result.
# Usage: roberta_train_test.sh LOOM SOURCE_DIR
set -uo pipefail
loom=$1
src=$2
source "$(dirname "$0")/train_fixture.sh"

write_recipe roberta 24 1 8
python3 - "$work/roberta.toml" "$fixtures/micro-roberta.json" <<'PY'
import sys
path, config = sys.argv[1], sys.argv[2]
text = open(path).read()
text = text.replace('config = "' + config.replace("micro-roberta", "micro-bert") + '"', 'config = "' + config + '"')
text = text.replace('blocks = ["bert.embeddings", { block = "bert.encoder-layer", repeat = "num_hidden_layers" }, "bert.pretraining-heads"]',
                    'blocks = ["roberta.embeddings", { block = "roberta.encoder-layer", repeat = "num_hidden_layers" }, "roberta.pretraining-heads"]')
text = text.replace('files = "' + path.rsplit("/", 1)[0] + '/shards/*training*.hdf5"',
                    'files = "' + path.rsplit("/", 1)[0] + '/shards/*training*.hdf5"\nmasking = "dynamic"\nmasked_lm_prob = 0.3')
text = text.replace('component = "nvlamb"\nlr = 5e-3', 'component = "adamw"\nlr = 3e-3\nweight_decay = 0.01')
open(path, "w").write(text)
PY
grep -q 'roberta.pretraining-heads' "$work/roberta.toml" && grep -q 'micro-roberta.json' "$work/roberta.toml" ||
  fail "the RoBERTa recipe was not written"
"$loom" run "$work/roberta.toml" > "$work/roberta.log" 2>&1 || { tail -5 "$work/roberta.log"; fail "loom run (RoBERTa)"; }
first=$(losses "$work/runs/roberta/metrics.jsonl" | head -3 | awk '{ s += $2 } END { print s / NR }')
last=$(losses "$work/runs/roberta/metrics.jsonl" | tail -3 | awk '{ s += $2 } END { print s / NR }')
echo "RoBERTa pre-training: mean loss of the first three steps $first, of the last three $last"
awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a - 0.5) }' || fail "the loss did not fall by 0.5 in 24 steps"

checkpoint="$work/runs/roberta/checkpoints/$(cat "$work/runs/roberta/checkpoints/latest")"
python3 - "$checkpoint" <<'PY' || fail "the checkpoint is not a RoBERTa checkpoint under Hugging Face's names"
import json, struct, sys
d = sys.argv[1]
config = json.load(open(d + "/config.json"))
assert config["model_type"] == "roberta" and config["architectures"] == ["RobertaForMaskedLM"], config
assert config["type_vocab_size"] == 1 and config["pad_token_id"] == 0, config
raw = open(d + "/model.safetensors", "rb").read()
names = set(json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])) - {"__metadata__"}
expected = {"roberta.embeddings." + n for n in ("word_embeddings.weight", "position_embeddings.weight",
                                                "token_type_embeddings.weight", "LayerNorm.weight", "LayerNorm.bias")}
expected |= {"lm_head.dense.weight", "lm_head.dense.bias", "lm_head.layer_norm.weight", "lm_head.layer_norm.bias",
             "lm_head.bias"}
for i in range(2):
    p = f"roberta.encoder.layer.{i}."
    for part in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
                 "attention.output.LayerNorm", "intermediate.dense", "output.dense", "output.LayerNorm"):
        expected |= {p + part + ".weight", p + part + ".bias"}
assert names == expected, (sorted(expected - names), sorted(names - expected))
PY

# Fine-tuning from the checkpoint: RoBERTa's classification head, then loom predict.
cat > "$work/spam.toml" <<TOML
[run]
name = "spam"
seed = 3
output_dir = "$work/runs"

[backend]
component = "cpu"
threads = 1

[tokenizer]
component = "wordpiece"
vocab = "$vocab"

[data]
component = "text-classification"
file = "$src/data/tasks/spam/train-200.tsv"
max_seq_length = 64
batch_size = 16

[model]
config = "$fixtures/micro-roberta.json"
blocks = ["roberta.embeddings", { block = "roberta.encoder-layer", repeat = "num_hidden_layers" }, "roberta.classifier-head"]
init_from = "$checkpoint"

[optimizer]
component = "adamw"
lr = 2e-3
bias_correction = true

[schedule]
component = "linear-warmup"
warmup = 0.1

[train]
steps = 12
log_every = 1

[checkpoint]
every = 0
keep = 1
TOML
"$loom" run "$work/spam.toml" > "$work/spam.log" 2>&1 || { tail -5 "$work/spam.log"; fail "fine-tuning RoBERTa from its checkpoint"; }
# Every encoder weight loaded (5 embeddings + 2 × 16 layer tensors); the classifier's 4 fresh; the
# masked-LM head's 5 unused.
grep -q "37 parameters loaded, 4 initialised fresh (missing), 5 unused (unexpected)" "$work/spam.log" ||
  { grep "init_from" "$work/spam.log"; fail "fine-tuning did not load exactly the encoder from the checkpoint"; }
spam="$work/runs/spam/checkpoints/$(cat "$work/runs/spam/checkpoints/latest" 2>/dev/null)"
python3 - "$spam" <<'PY' || fail "the fine-tuned checkpoint is not a RobertaForSequenceClassification"
import json, struct, sys
d = sys.argv[1]
config = json.load(open(d + "/config.json"))
assert config["architectures"] == ["RobertaForSequenceClassification"] and config["model_type"] == "roberta", config
raw = open(d + "/model.safetensors", "rb").read()
names = set(json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])) - {"__metadata__"}
head = {n for n in names if not n.startswith("roberta.")}
assert head == {"classifier.dense.weight", "classifier.dense.bias", "classifier.out_proj.weight",
                "classifier.out_proj.bias"}, sorted(head)
PY
printf 'win a free prize now\nthe meeting moved to friday\n' > "$work/mails.txt"
"$loom" predict --checkpoint "$spam" --input "$work/mails.txt" > "$work/predictions.txt" 2> "$work/predict.err" ||
  { cat "$work/predict.err"; fail "loom predict on the fine-tuned RoBERTa"; }
[ "$(tail -n +2 "$work/predictions.txt" | cut -f1 | grep -cE '^(ham|spam)$')" -eq 2 ] ||
  { cat "$work/predictions.txt"; fail "loom predict did not name ham or spam for each of the 2 mails"; }

if [ $failures -ne 0 ]; then echo "$failures failed"; exit 1; fi
echo "RoBERTa end-to-end: all passed"
