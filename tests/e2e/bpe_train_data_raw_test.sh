#!/usr/bin/env bash
# Loom's BPE trainer on the whole of data/raw (scripts/fetch-data's 371 files) learns, merge for
# merge, the 29,887 merges Hugging Face `tokenizers`' BpeTrainer learns with its defaults
# (tests/fixtures/bpe/expected-data-raw-merges.txt, written by the Node.js binding: `new
# Tokenizer(BPE.empty())`, ByteLevel pre-tokenizer without a prefix space, `train(files)`).
# Usage: bpe_train_data_raw_test.sh LOOM_HOST_TESTS SOURCE_DIR
set -uo pipefail
tests=$1
src=$2
log=$(mktemp); trap 'rm -f "$log"' EXIT
"$src/scripts/fetch-data" > "$log" 2>&1 || { tail -5 "$log"; echo "FAIL: scripts/fetch-data"; exit 1; }
LOOM_BPE_TRAIN_CORPUS="$src/data/raw" LOOM_BPE_TRAIN_EXPECTED="$src/tests/fixtures/bpe/expected-data-raw-merges.txt" \
  "$tests" --gtest_filter=BpeTrainer.LearnsTheMergesTokenizersLearnsOnACorpusDirectory > "$log" 2>&1
status=$?
cat "$log"
grep -q "^\[       OK \] BpeTrainer.LearnsTheMergesTokenizersLearnsOnACorpusDirectory" "$log" && [ $status -eq 0 ] ||
  { echo "FAIL: the merges learned on data/raw"; exit 1; }
