# Shared by the `loom run` end-to-end tests (train_test.sh, run_ownership_test.sh,
# checkpoint_disk_full_test.sh): a scratch directory, small pre-training shards cut from real text
# (scripts/fetch-data), a micro-BERT recipe writer, a loss extractor and comparison, and an
# exact-resume check.
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

# Losses of two metrics files agree step for step within a relative bound; prints the worst.
same_losses() { # a b bound what
  losses "$1" > "$work/a.txt"; losses "$2" > "$work/b.txt"
  [ -s "$work/a.txt" ] && [ "$(wc -l < "$work/a.txt")" -eq "$(wc -l < "$work/b.txt")" ] || { fail "$4: different record counts"; return; }
  worst=$(paste "$work/a.txt" "$work/b.txt" | awk '
    { d = ($2 - $4) / ($2 == 0 ? 1 : $2); if (d < 0) d = -d; if ($1 != $3) bad = 1; if (d > w) w = d }
    END { if (bad) print "mismatch"; else printf "%.3g\n", w }')
  echo "$4: worst relative loss difference $worst (bound $3)"
  [ "$worst" != mismatch ] && awk -v w="$worst" -v b="$3" 'BEGIN { exit !(w <= b) }' || fail "$4: losses differ by $worst"
}
# Exact resume: NAME's recipe run again as NAME-killed, killed during its step-20 checkpoint, then
# resumed from step 10; its losses must equal the uninterrupted run's (runs/NAME, already trained).
killed_run_resumes_exactly() { # name what
  local name=$1 what=$2
  sed "s|name = \"$name\"|name = \"$name-killed\"|" "$work/$name.toml" > "$work/$name-killed.toml"
  LOOM_FAULT_KILL_IN_CHECKPOINT=step-000020 "$loom" run "$work/$name-killed.toml" --quiet > "$work/$name-killed.log" 2>&1
  [ "$(cat "$work/runs/$name-killed/checkpoints/latest")" = "step-000010" ] ||
    fail "$what: latest is not step-000010 after the kill"
  "$loom" run "$work/$name-killed.toml" --resume auto --quiet > "$work/$name-resumed.log" 2>&1 ||
    { tail -5 "$work/$name-resumed.log"; fail "$what: loom run --resume auto"; }
  same_losses "$work/runs/$name/metrics.jsonl" "$work/runs/$name-killed/metrics.jsonl" 0 "$what resumed against uninterrupted"
}
losses() { grep '"type":"train"' "$1" | sed -E 's/.*"loss":([^,]*),.*"step":([0-9]+).*/\2 \1/; s/.*"step":([0-9]+).*"loss":([^,]*),.*/\1 \2/' | sort -n; }

