#!/usr/bin/env bash
# The GPU quickstart's recipes (configs/quickstart/gpu-*.toml) for two steps each on backend/cpu, in
# the order and with the --set overrides scripts/quickstart gives them on a GPU (less
# backend.component=cuda): phase 1 (bert-small, bf16-mixed) on shards of data/raw and data/raw-extra
# made with the GPU quickstart's vocabulary (scripts/quickstart-vocab --gpu), phase 2 from phase 1's
# checkpoint, spam fine-tuning (all mails and 200) and the SQuAD-format stand-in from phase 1 and
# from random initialisation. Batches, evaluation and the SQuAD files are cut down to keep it to
# seconds; the model, vocabulary, precision, optimizer and the chain of checkpoints are the recipes'.
# Also: scripts/quickstart --which-device and its refusals.
# Usage: quickstart_gpu_recipes_test.sh SOURCE_DIR LOOM. Skips (77) without the fetched data.
set -uo pipefail
src=$1
loom=$2
cd "$src"
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
work=$(mktemp -d /tmp/loom-gpu-recipes-XXXXXX)
trap 'rm -rf "$work"' EXIT

if ! scripts/fetch-data > "$work/fetch.log" 2>&1; then
  if [ ! -d data/raw-extra/gcide ]; then
    echo "SKIP: scripts/fetch-data failed and data/raw-extra is absent: $(tail -3 "$work/fetch.log")"; exit 77
  fi
  cat "$work/fetch.log"; echo "FAIL: scripts/fetch-data"; exit 1
fi

# The device the quickstart picks, and its refusals.
which=$(scripts/quickstart --which-device 2>&1) || fail "--which-device exited non-zero: $which"
if [ -e /dev/nvidia0 ]; then
  [[ "$which" == *"quickstart: GPU found"* || "$which" == *"no usable GPU"* ]] || fail "--which-device: $which"
else
  [[ "$which" == "quickstart: no usable GPU ("*"): pre-training modernbert-tiny on the CPU" ]] || fail "--which-device: $which"
  out=$(scripts/quickstart --which-device --device cuda 2>&1) && fail "--device cuda without a GPU exited 0"
  [[ "$out" == *"backend/cuda cannot run here"* ]] || fail "--device cuda without a GPU: $out"
fi
[ "$(scripts/quickstart --which-device --device cpu)" = "quickstart: --device cpu: pre-training modernbert-tiny on the CPU" ] ||
  fail "--device cpu"
[ "$(scripts/quickstart --which-device --device cpu --model bert)" = "quickstart: --device cpu: pre-training bert-tiny on the CPU" ] ||
  fail "--device cpu --model bert"
scripts/quickstart --model roberta > "$work/bad-model.log" 2>&1; [ $? = 2 ] && grep -q "takes modernbert or bert" "$work/bad-model.log" ||
  fail "--model roberta: $(cat "$work/bad-model.log")"
scripts/quickstart --device gpu > "$work/bad.log" 2>&1; [ $? = 2 ] && grep -q "takes cpu or cuda" "$work/bad.log" ||
  fail "--device gpu: $(cat "$work/bad.log")"

# The GPU vocabulary (from all of data/raw and data/raw-extra, into a scratch data directory) and
# shards of a few documents of each corpus.
mkdir -p "$work/data/vocab" "$work/corpus"
ln -s "$src/data/raw" "$work/data/raw"
ln -s "$src/data/raw-extra" "$work/data/raw-extra"
scripts/quickstart-vocab --gpu "$loom" "$work/data" > "$work/vocab.log" 2>&1 || { cat "$work/vocab.log"; fail "vocab"; }
vocab=$work/data/vocab/quickstart-gpu-8192.txt
[ "$(wc -l < "$vocab")" = 8192 ] || fail "the GPU vocabulary has $(wc -l < "$vocab") lines, not 8192"
cp data/raw/sotu/$(ls data/raw/sotu | head -1) data/raw-extra/brown/ca0[1-4].txt \
  data/raw-extra/gcide/000[1-4]-*.txt "$work/corpus/"
for seq in 128 512; do
  "$loom" prep pretraining --vocab "$vocab" --input "$work/corpus" --output "$work/seq$seq" --max-seq-length $seq \
    --max-predictions $((seq * 20 / 128)) --dupe-factor 1 --heldout-fraction 0.3 --seed 12345 > "$work/prep$seq.log" 2>&1 ||
    { cat "$work/prep$seq.log"; fail "prep seq $seq"; }
done
# The SQuAD stand-in cut to its first two articles (train and dev).
/usr/bin/python3 - data/tasks/squad-mentions "$work" <<'PY'
import json, sys
for split in ("train", "dev"):
    d = json.load(open(f"{sys.argv[1]}/{split}-v1.1.json", encoding="utf-8"))
    d["data"] = d["data"][:2]
    json.dump(d, open(f"{sys.argv[2]}/squad-{split}.json", "w", encoding="utf-8"))
PY

common=(--set "run.output_dir=$work/runs" --set "tokenizer.vocab=$vocab" --set train.steps=2 --set train.log_every=1
        --set data.batch_size=4 --set eval_data.batch_size=4 --set train.eval_batches=1)
run() { # NAME RECIPE [--set ...]: loom run with the common overrides; its log in $work/NAME.log
  local name=$1 recipe=$2; shift 2
  if ! "$loom" run "configs/quickstart/$recipe" "${common[@]}" --set "run.name=$name" "$@" > "$work/$name.log" 2>&1; then
    tail -20 "$work/$name.log"; fail "$recipe ($name)"; return 1
  fi
  grep -q '"type":"eval"' "$work/runs/$name/metrics.jsonl" || fail "$name: no evaluation in metrics.jsonl"
}
eval_value() { # NAME KEY: KEY of NAME's last evaluation
  /usr/bin/python3 -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1])]; print([x for x in r if x.get("type")=="eval"][-1].get(sys.argv[2]))' \
    "$work/runs/$1/metrics.jsonl" "$2"
}

run quickstart-phase1 gpu-pretrain-phase1.toml --set "data.files=$work/seq128/training_*.hdf5" \
  --set "eval_data.files=$work/seq128/heldout_*.hdf5" --set train.eval_every=2
phase1=$work/runs/quickstart-phase1/checkpoints/step-000002
/usr/bin/python3 - "$phase1/config.json" <<'PY' || fail "phase 1's checkpoint is not bert-small with 8,192 pieces"
import json, sys
c = json.load(open(sys.argv[1]))
assert (c["num_hidden_layers"], c["hidden_size"], c["num_attention_heads"], c["vocab_size"]) == (4, 512, 8, 8192), c
PY
resolved() { # NAME TABLE KEY: the value the run used (its recipe.resolved.toml)
  /usr/bin/python3 -c 'import sys,tomllib; print(tomllib.load(open(sys.argv[1],"rb"))[sys.argv[2]][sys.argv[3]])' \
    "$work/runs/$1/recipe.resolved.toml" "$2" "$3"
}
[ "$(resolved quickstart-phase1 precision component)" = bf16-mixed ] || fail "phase 1 does not run bf16-mixed"
[ "$(resolved quickstart-phase1 optimizer component)" = nvlamb ] || fail "phase 1's optimizer"
[ "$(eval_value quickstart-phase1 eval_mlm_unigram_baseline)" != None ] || fail "phase 1: no unigram baseline"
[ "$(eval_value quickstart-phase1 eval_mlm_mask_accuracy)" != None ] || fail "phase 1: no [MASK] accuracy"

run quickstart-phase2 gpu-pretrain-phase2.toml --set "model.init_from=$phase1" --set data.batch_size=2 \
  --set eval_data.batch_size=2 --set "data.files=$work/seq512/training_*.hdf5" --set "eval_data.files=$work/seq512/heldout_*.hdf5"
for init in pretrained scratch; do
  from=$phase1; [ $init = scratch ] && from=
  run "spam-$init" gpu-finetune-spam.toml --set "model.init_from=$from"
  [ "$(eval_value "spam-$init" eval_accuracy)" != None ] || fail "spam-$init: no accuracy"
  run "lowres-$init" gpu-finetune-spam-lowres.toml --set run.seed=1 --set "model.init_from=$from"
  run "squad-$init" gpu-finetune-squad-mentions.toml --set "model.init_from=$from" \
    --set "data.file=$work/squad-train.json" --set "eval_data.file=$work/squad-dev.json" --set train.eval_batches=0
  [ "$(eval_value "squad-$init" eval_exact_match)" != None ] || fail "squad-$init: no exact match"
done
[[ "$(resolved lowres-pretrained data file)" == */data/tasks/spam/train-200.tsv || "$(resolved lowres-pretrained data file)" == data/tasks/spam/train-200.tsv ]] ||
  fail "the low-resource run reads $(resolved lowres-pretrained data file), not train-200.tsv"
[[ "$(resolved lowres-pretrained model config)" == *bert-small-v8192.json ]] || fail "the low-resource run's model"
[ "$(resolved spam-pretrained optimizer lr)" = "$(resolved lowres-scratch optimizer lr)" ] || fail "fine-tuning learning rates differ"

if [ $failures -gt 0 ]; then echo "$failures failure(s)"; exit 1; fi
echo "ok: the GPU quickstart's recipes ran two steps each on backend/cpu, phase 1 → phase 2 → fine-tuning"
