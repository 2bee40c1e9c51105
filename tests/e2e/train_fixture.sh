# Shared by the `loom run` end-to-end tests (train_test.sh, run_ownership_test.sh,
# checkpoint_disk_full_test.sh): a scratch directory, small pre-training shards cut from real text
# (scripts/fetch-data), a micro-BERT recipe writer and a loss extractor.
# Source it with `loom` (the binary) and `src` (the source tree) set. It sets `work`, `vocab`,
# `fixtures`, `failures` and `fail`; the scratch directory is removed on exit.
work=$(mktemp -d /tmp/loom-train-test-XXXXXX)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
fixtures="$src/tests/fixtures/train"

source "$(dirname "${BASH_SOURCE[0]}")/sotu_shards.sh"
fetch_real_text || exit 1
# A small real corpus: a few State of the Union addresses.
make_sotu_shards "$work/shards" 12 2 --heldout-fraction 0.2 || exit 1

write_recipe() { # name steps accumulation batch extra...
  cat > "$work/$1.toml" <<TOML
[run]
name = "$1"
seed = 11
output_dir = "$work/runs"

[backend]
component = "cpu"
threads = 1

[tokenizer]
component = "wordpiece"
vocab = "$vocab"

[data]
component = "pretraining-shards"
files = "$work/shards/*training*.hdf5"
batch_size = $4

[eval_data]
component = "pretraining-shards"
files = "$work/shards/*heldout*.hdf5"
batch_size = 16
shuffle = false

[model]
config = "$fixtures/micro-bert.json"
blocks = ["bert.embeddings", { block = "bert.encoder-layer", repeat = "num_hidden_layers" }, "bert.pretraining-heads"]

[optimizer]
component = "nvlamb"
lr = 5e-3

[schedule]
component = "poly-warmup"
warmup = 0.1

[train]
steps = $2
grad_accumulation = $3
log_every = 1
eval_every = 20
eval_batches = 2

[checkpoint]
every = 10
keep = 3
TOML
}

losses() { grep '"type":"train"' "$1" | sed -E 's/.*"loss":([^,]*),.*"step":([0-9]+).*/\2 \1/; s/.*"step":([0-9]+).*"loss":([^,]*),.*/\1 \2/' | sort -n; }

