#!/usr/bin/env bash
# Pre-training shards (HDF5 + manifest.json) through `loom run`: every malformed shard or manifest
# is refused before a step trains — exit 2, the message naming the file and the key (and row and
# column for a bad value) — and the valid shards and the fixtures stay byte for byte as they were.
# Shards are prepared here from two documents of this tree (32 tokens, a second set of 128).
# Usage: shards.sh LOOM SOURCE_DIR SHARD_EDIT
set -euo pipefail
loom=$1
src=$2
shard_edit=$3
source "$(dirname "$0")/lib.sh"

mkdir "$work/text"
cp "$src/docs/design.md" "$src/docs/data.md" "$work/text/"
prep() { # OUTPUT SEQ_LENGTH
  "$loom" prep pretraining --vocab "$glue/vocab.txt" --input "$work/text" --output "$1" --max-seq-length "$2" \
    --max-predictions 5 --shards 1 --dupe-factor 1 --threads 1 > "$work/prep.log" 2>&1 ||
    { cat "$work/prep.log"; exit 1; }
}
prep "$work/shards" 32
prep "$work/shards128" 128
shards=$work/shards
{ recipe_head pretrain; cat <<TOML; recipe_tail bert.pretraining-heads 2; } > "$work/pretrain.toml"
[data]
component = "pretraining-shards"
files = "$work/bad/training_*.hdf5"
batch_size = 8

TOML
snapshot "$shards" "$work/shards128" "$glue"

runs=0
# refused CODE REGEX [--set ...]: `loom run` on $work/bad is refused and trains nothing.
refused() {
  local code=$1 pattern=$2
  shift 2
  runs=$((runs + 1))
  expect_refusal "$code" "$pattern" -- "$loom" run "$work/pretrain.toml" --set "run.name=r$runs" "$@" --quiet
  [ ! -e "$work/runs/r$runs/checkpoints" ] || fail "refused run r$runs wrote checkpoints"
}
# bad EDIT...: $work/bad is a copy of the valid shards, then EDIT runs in it.
bad() {
  rm -rf "$work/bad"
  cp -r "$shards" "$work/bad"
  (cd "$work/bad" && "$@")
}
shard=$work/bad/training_00000.hdf5

bad true
expect_ok "pre-training on the valid shards" -- "$loom" run "$work/pretrain.toml" --quiet

# --- manifest.json: the vocabulary the shards were prepared with ---
sed 's/^attic$/garret/' "$glue/vocab.txt" > "$work/other-vocab.txt"  # same size, another token
refused 2 "$(lit "$work/bad/manifest.json: these shards were prepared with the vocabulary $glue/vocab.txt").*$(lit "but the run's [tokenizer] reads $work/other-vocab.txt")" \
  --set "tokenizer.vocab=$work/other-vocab.txt"
bad sed -i 's/"size": 151/"size": "big"/' manifest.json
refused 2 "$(lit "$work/bad/manifest.json: key 'vocab.size'"): missing or not a positive 32-bit integer"
bad /usr/bin/python3 -c 'import json; m = json.load(open("manifest.json")); del m["vocab"]; json.dump(m, open("manifest.json", "w"))'
refused 2 "$(lit "$work/bad/manifest.json: key 'vocab'"): missing or not an object"
bad sh -c 'echo "{" > manifest.json'
refused 2 "$(lit "$work/bad/manifest.json"): not a JSON object"

# --- The HDF5 files themselves ---
bad sh -c 'head -c 10000 training_00000.hdf5 > cut && mv cut training_00000.hdf5'
refused 2 "$(lit "$shard"): cannot open as HDF5 \(truncated or corrupted\?\)"
bad sh -c 'echo "not hdf5" > training_00000.hdf5'
refused 2 "$(lit "$shard"): not a readable HDF5 file"
bad rm training_00000.hdf5
refused 2 "$(lit "data.files = \"$work/bad/training_*.hdf5\"") matches no file"
bad "$shard_edit" training_00000.hdf5 masked_lm_ids --delete
refused 2 "$(lit "$shard"): key 'masked_lm_ids': missing"
# A held-out split with no instance (the corpus is too small for one).
bad true
refused 2 "$(lit "--set data.files=$work/bad/heldout_*.hdf5: $work/bad/heldout_00000.hdf5") holds no instance" \
  --set "data.files=$work/bad/heldout_*.hdf5"
cp "$work/shards128/training_00000.hdf5" "$work/bad/training_00001.hdf5"
refused 2 "$(lit "$work/bad/training_00001.hdf5: shape [128, 5] differs from $shard [32, 5]")"
bad true
refused 2 "$(lit "data.max_seq_length = 64 but $shard holds sequences of 32")" --set data.max_seq_length=64

# --- Values, range-checked when a shard is read: file, key, row, column ---
bad "$shard_edit" training_00000.hdf5 input_ids 3 5 151
refused 2 "$(lit "$shard: key 'input_ids': row 3, column 5: token id 151 is outside the vocabulary [0, 151) of $glue/vocab.txt")"
bad "$shard_edit" training_00000.hdf5 input_ids 0 0 -4
refused 2 "$(lit "$shard: key 'input_ids': row 0, column 0: token id -4 is negative")"
bad "$shard_edit" training_00000.hdf5 segment_ids 17 4 5
refused 2 "$(lit "$shard: key 'segment_ids': row 17, column 4: value 5 is neither 0 nor 1")"
bad "$shard_edit" training_00000.hdf5 next_sentence_labels 2 0 7
refused 2 "$(lit "$shard: key 'next_sentence_labels': row 2: value 7 is neither 0")"
bad "$shard_edit" training_00000.hdf5 masked_lm_positions 1 0 40
refused 2 "$(lit "$shard: key 'masked_lm_positions': row 1, column 0: position 40 is outside the row's 32 real tokens")"

# --- Shards that do not fit the model or the masking ---
# 128-token sequences for a model of 64 positions: refused at open, not in the embeddings at step 1.
refused 2 "$(lit "[data]: its sequences are up to 128 tokens long (data.files = \"$work/shards128/training_*.hdf5\"), longer than the model's max_position_embeddings = 64 ($glue/tiny-bert.json)")" \
  --set "data.files=$work/shards128/training_*.hdf5"
# Dynamic masking needs [MASK]; without it the vocabulary is named (not an id out of range).
sed 's/^\[MASK\]$/[NOTMASK]/' "$glue/vocab.txt" > "$work/no-mask-vocab.txt"
mkdir -p "$work/bare"
cp "$shards/training_00000.hdf5" "$work/bare/"  # no manifest.json beside it
refused 2 "$(lit "the vocabulary $work/no-mask-vocab.txt has no [MASK] token")" \
  --set "tokenizer.vocab=$work/no-mask-vocab.txt" --set "data.files=$work/bare/training_*.hdf5" --set data.masking=dynamic
grep -q "is outside \[0," "$work/err" && fail "the [MASK] problem surfaced as an id out of range"

unchanged "$shards" "$work/shards128" "$glue"
finish
