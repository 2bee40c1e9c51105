#!/usr/bin/env bash
# ModernBERT end to end with `loom run` on real text: masked-LM pre-training with dynamic masks
# (dropout on, a local layer whose window is shorter than the sequence), an exact resume, the
# checkpoint's config.json a ModernBERT config naming ModernBertForMaskedLM and its weights under
# Hugging Face's names, then spam fine-tuning from that checkpoint (mean pooling) and `loom predict`
# on its result; the same fine-tuning with [train] freeze leaves the embeddings as pre-trained.
# Usage: modernbert_train_test.sh LOOM SOURCE_DIR
set -uo pipefail
loom=$1
src=$2
source "$(dirname "$0")/train_fixture.sh"

modern_recipe() { # name steps extra...
  write_recipe "$1" "$2" 1 8
  python3 - "$work/$1.toml" "$fixtures/micro-modernbert.json" <<'PY'
import sys
path, config = sys.argv[1], sys.argv[2]
text = open(path).read()
text = text.replace('config = "' + config.replace("micro-modernbert", "micro-bert") + '"', 'config = "' + config + '"')
text = text.replace('blocks = ["bert.embeddings", { block = "bert.encoder-layer", repeat = "num_hidden_layers" }, "bert.pretraining-heads"]',
                    'blocks = ["modernbert.embeddings", { block = "modernbert.encoder-layer", repeat = "num_hidden_layers" }, "modernbert.pretraining-heads"]')
text = text.replace('files = "' + sys.argv[1].rsplit("/", 1)[0] + '/shards/*training*.hdf5"',
                    'files = "' + sys.argv[1].rsplit("/", 1)[0] + '/shards/*training*.hdf5"\nmasking = "dynamic"\nmasked_lm_prob = 0.3')
text = text.replace('component = "nvlamb"\nlr = 5e-3', 'component = "adamw"\nlr = 3e-3\nweight_decay = 0.01')
open(path, "w").write(text)
PY
}

modern_recipe modern 24
grep -q 'modernbert.pretraining-heads' "$work/modern.toml" && grep -q 'masking = "dynamic"' "$work/modern.toml" ||
  fail "the ModernBERT recipe was not written"
"$loom" run "$work/modern.toml" > "$work/modern.log" 2>&1 || { tail -5 "$work/modern.log"; fail "loom run (ModernBERT)"; }
first=$(losses "$work/runs/modern/metrics.jsonl" | head -3 | awk '{ s += $2 } END { print s / NR }')
last=$(losses "$work/runs/modern/metrics.jsonl" | tail -3 | awk '{ s += $2 } END { print s / NR }')
echo "ModernBERT pre-training: mean loss of the first three steps $first, of the last three $last"
awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a - 0.5) }' || fail "the loss did not fall by 0.5 in 24 steps"

checkpoint="$work/runs/modern/checkpoints/$(cat "$work/runs/modern/checkpoints/latest")"
python3 - "$checkpoint" <<'PY' || fail "the checkpoint is not a ModernBERT checkpoint under Hugging Face's names"
import json, struct, sys
d = sys.argv[1]
config = json.load(open(d + "/config.json"))
assert config["model_type"] == "modernbert" and config["architectures"] == ["ModernBertForMaskedLM"], config
assert "hidden_act" not in config and "type_vocab_size" not in config, sorted(config)
assert config["local_attention"] == 16 and config["global_attn_every_n_layers"] == 2
raw = open(d + "/model.safetensors", "rb").read()
names = set(json.loads(raw[8:8 + struct.unpack("<Q", raw[:8])[0]])) - {"__metadata__"}
expected = {"model.embeddings.tok_embeddings.weight", "model.embeddings.norm.weight", "model.final_norm.weight",
            "head.dense.weight", "head.norm.weight", "decoder.bias"}
for i in range(3):
    expected |= {f"model.layers.{i}.attn.Wqkv.weight", f"model.layers.{i}.attn.Wo.weight",
                 f"model.layers.{i}.mlp_norm.weight", f"model.layers.{i}.mlp.Wi.weight", f"model.layers.{i}.mlp.Wo.weight"}
    if i > 0:
        expected.add(f"model.layers.{i}.attn_norm.weight")
extra = names - expected - {"decoder.weight"}
assert expected <= names and not extra, (sorted(expected - names), sorted(extra))
PY

# Exact resume: the same run killed during its step-20 checkpoint, resumed from step 10.
killed_run_resumes_exactly modern "ModernBERT"

# Fine-tuning from the checkpoint: the classifier head with mean pooling, then loom predict.
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
config = "$fixtures/micro-modernbert.json"
blocks = ["modernbert.embeddings", { block = "modernbert.encoder-layer", repeat = "num_hidden_layers" }, "modernbert.classifier-head"]
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
"$loom" run "$work/spam.toml" > "$work/spam.log" 2>&1 || { tail -5 "$work/spam.log"; fail "fine-tuning ModernBERT from its checkpoint"; }
spam="$work/runs/spam/checkpoints/$(cat "$work/runs/spam/checkpoints/latest" 2>/dev/null)"
python3 -c "import json,sys; c=json.load(open(sys.argv[1])); assert c['architectures']==['ModernBertForSequenceClassification'], c" \
  "$spam/config.json" || fail "the fine-tuned checkpoint does not name ModernBertForSequenceClassification"
printf 'win a free prize now\nthe meeting moved to friday\n' > "$work/mails.txt"
"$loom" predict --checkpoint "$spam" --input "$work/mails.txt" > "$work/predictions.txt" 2> "$work/predict.err" ||
  { cat "$work/predict.err"; fail "loom predict on the fine-tuned ModernBERT"; }
# A header, then one prediction per mail, named by the task's labels.
[ "$(tail -n +2 "$work/predictions.txt" | cut -f1 | grep -cE '^(ham|spam)$')" -eq 2 ] ||
  { cat "$work/predictions.txt"; fail "loom predict did not name ham or spam for each of the 2 mails"; }

# [train] freeze: the embeddings stay exactly as pre-trained while the layers train; a prefix that
# names no parameter is refused naming the key.
sed -e 's|name = "spam"|name = "spam-frozen"|' -e 's|^steps = 12|steps = 12\nfreeze = ["model.embeddings."]|' \
  "$work/spam.toml" > "$work/spam-frozen.toml"
"$loom" run "$work/spam-frozen.toml" > "$work/spam-frozen.log" 2>&1 ||
  { tail -5 "$work/spam-frozen.log"; fail "fine-tuning with [train] freeze"; }
grep -q "\[train\] freeze: 2 of " "$work/spam-frozen.log" || fail "the run did not say what it froze"
frozen="$work/runs/spam-frozen/checkpoints/$(cat "$work/runs/spam-frozen/checkpoints/latest" 2>/dev/null)"
python3 - "$checkpoint/model.safetensors" "$frozen/model.safetensors" <<'PY' || fail "[train] freeze did not leave the embeddings as they were"
import json, struct, sys
def tensors(path):
    raw = open(path, "rb").read()
    size = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + size])
    return {k: raw[8 + size + v["data_offsets"][0]:8 + size + v["data_offsets"][1]]
            for k, v in header.items() if k != "__metadata__"}
before, after = tensors(sys.argv[1]), tensors(sys.argv[2])
for name in ("model.embeddings.tok_embeddings.weight", "model.embeddings.norm.weight"):
    assert before[name] == after[name], name + " changed"
assert before["model.layers.0.attn.Wqkv.weight"] != after["model.layers.0.attn.Wqkv.weight"], "the layers did not train"
PY
sed -e 's|name = "spam-frozen"|name = "spam-misspelt"|' -e 's|model.embeddings.|model.embedings.|' \
  "$work/spam-frozen.toml" > "$work/spam-misspelt.toml"
if "$loom" run "$work/spam-misspelt.toml" > "$work/misspelt.log" 2>&1; then
  fail "a freeze prefix that names no parameter was accepted"
fi
grep -q "\[train\] freeze: 'model.embedings.' begins no parameter's name" "$work/misspelt.log" ||
  { cat "$work/misspelt.log"; fail "the refusal did not name [train] freeze and the prefix"; }

if [ $failures -ne 0 ]; then echo "$failures failed"; exit 1; fi
echo "ModernBERT end-to-end: all passed"
