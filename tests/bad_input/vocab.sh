#!/usr/bin/env bash
# Vocabularies through `loom tokenize`, `loom run`, `loom prep pretraining` and `loom vocab train`:
# a vocabulary that is missing, empty, lacks a token its use needs, or is larger than the model's
# embedding table is refused with exit 2 and a message naming the file (and the token or the
# sizes); nothing is trained or prepared from it, and shards an earlier prep wrote stay whole.
# Usage: vocab.sh LOOM SOURCE_DIR
set -euo pipefail
loom=$1
src=$2
source "$(dirname "$0")/lib.sh"

vocab=$glue/vocab.txt
classifier_recipe fine
mkdir "$work/text"
cp "$src/docs/design.md" "$work/text/"
without() { grep -vxF "$1" "$vocab" > "$work/$2"; }  # a copy of the vocabulary without token $1
: > "$work/empty.txt"
without "[UNK]" no-unk.txt
without "[CLS]" no-cls.txt
without "[MASK]" no-mask.txt
{ cat "$vocab"; for i in $(seq 1 20); do echo "extra$i"; done; } > "$work/larger.txt"
snapshot "$glue"

tokenize() { echo "the cat sat" | "$loom" tokenize --vocab "$@"; }
run=0
train() { # VOCAB [--set ...]: `loom run` of the classifier with that vocabulary
  run=$((run + 1))
  "$loom" run "$work/fine.toml" --set "run.name=v$run" --set "tokenizer.vocab=$1" "${@:2}" --quiet
}
prep() { "$loom" prep pretraining --vocab "$1" --input "$work/text" --output "$2" --max-seq-length 32 \
  --max-predictions 5 --shards 1 --dupe-factor 1 --threads 1; }

# The vocabulary file itself.
expect_refusal 2 "$(lit "--vocab: File does not exist: $work/none.txt")" -- tokenize "$work/none.txt"
expect_refusal 2 "$(lit "tokenizer.vocab: no vocabulary file '$work/none.txt'")" -- train "$work/none.txt"
expect_refusal 2 "$(lit "tokenizer.vocab: no vocabulary file '$work'")" -- train "$work"
expect_refusal 2 "$(lit "$work/empty.txt: the vocabulary file is empty")" -- tokenize "$work/empty.txt"
expect_refusal 2 "$(lit "$work/empty.txt: the vocabulary file is empty")" -- train "$work/empty.txt"
expect_refusal 2 "$(lit "$work/empty.txt: the vocabulary file is empty")" -- prep "$work/empty.txt" "$work/p1"

# Tokens a use needs: [UNK] always, [CLS] and [SEP] to encode a text, [MASK] to prepare shards.
expect_refusal 2 "$(lit "tokenizer.vocab: '$work/no-unk.txt' has no [UNK] token")" -- tokenize "$work/no-unk.txt"
expect_refusal 2 "$(lit "--set tokenizer.vocab=$work/no-unk.txt: tokenizer.vocab: '$work/no-unk.txt' has no [UNK] token")" \
  -- train "$work/no-unk.txt"
expect_ok "tokenize needs no [CLS]" -- tokenize "$work/no-cls.txt"
expect_refusal 2 "$(lit "$work/no-cls.txt: has no [CLS] token; encoding a text or a pair")" -- train "$work/no-cls.txt"
expect_refusal 2 "$(lit "$work/no-cls.txt: the vocabulary has no [CLS] token; pre-training instances need")" \
  -- prep "$work/no-cls.txt" "$work/p2"
[ ! -e "$work/p2" ] || fail "a refused prep created its output folder"
# Shards prepared earlier stay as they are when a prep into their folder is refused (the
# vocabulary is checked before the folder is touched; its manifest.json used to be removed first).
expect_ok "prep with the fixture vocabulary" -- prep "$vocab" "$work/shards"
snapshot "$work/shards"
expect_refusal 2 "$(lit "$work/no-mask.txt: the vocabulary has no [MASK] token")" -- prep "$work/no-mask.txt" "$work/shards"
unchanged "$work/shards"

# A vocabulary larger than the model's embedding table: its last ids would have no row.
expect_refusal 2 "$(lit "$glue/tiny-bert.json: vocab_size 151 is smaller than the [tokenizer] vocabulary (171 tokens)")" \
  -- train "$work/larger.txt"
[ -z "$(ls "$work"/runs/*/checkpoints 2> /dev/null)" ] || fail "a refused vocabulary trained: $(ls "$work"/runs/*)"

# `loom vocab train`: text without words, a --size below the special tokens and the alphabet.
expect_refusal 2 "$(lit "--input $work/empty.txt: no words to learn a vocabulary from")" \
  -- "$loom" vocab train --input "$work/empty.txt" --size 200 --output "$work/learned.txt"
expect_refusal 2 "--size 120 is too small: the 104 special tokens and the corpus's [0-9]+ alphabet entries need" \
  -- "$loom" vocab train --input "$work/text" --size 120 --output "$work/learned.txt"
expect_refusal 2 "$(lit "--input $work/none: no such file or directory")" \
  -- "$loom" vocab train --input "$work/none" --size 200 --output "$work/learned.txt"
[ ! -e "$work/learned.txt" ] || fail "a refused vocab train wrote its output"

unchanged "$glue"
finish
