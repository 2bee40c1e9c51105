#!/usr/bin/env bash
# `loom vocab train` end to end: a vocabulary trained on real corpus lines plus multilingual text
# has BERT's layout, is reproducible byte for byte, and tokenizes its own training text with no
# [UNK] (id 100) — checked with `loom tokenize`, independently of the trainer's own report.
# Input it refuses (a --size too small, text without words) is in tests/bad_input/vocab.sh.
# Usage: vocab_train_test.sh LOOM FIXTURES_DIR
set -uo pipefail
loom=$1
fixtures=$2
failures=0
checks=0
check() { checks=$((checks + 1)); if ! eval "$1"; then echo "FAIL: $2"; failures=$((failures + 1)); fi; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Real text (the corpus sample of the parity fixture: the lines after its 30 adversarial ones)
# plus accents, CJK, Greek, Cyrillic, emoji.
tail -n +31 "$fixtures/tokenize/hf_parity_input.txt" >"$work/train.txt"
cat >>"$work/train.txt" <<'TEXT'
Héllò NAÏVE café résumé Ωmega ΟΔΟΣ Ελληνικά Русский 中文字符 ひらがな 한국어 😀👍🏽 ﬁne ½ ±3 5€ [CLS] x [SEP]
TEXT

"$loom" vocab train --input "$work/train.txt" --size 3000 --output "$work/vocab.txt" >"$work/report.txt" 2>&1
code=$?
check '[ $code -eq 0 ]' "vocab train failed: $(cat "$work/report.txt")"
check '[ "$(wc -l <"$work/vocab.txt")" -eq 3000 ]' "vocab has $(wc -l <"$work/vocab.txt") lines, expected 3000"
check '[ "$(sed -n "1p;2p;101p;102p;103p;104p" "$work/vocab.txt" | tr "\n" " ")" = "[PAD] [unused0] [UNK] [CLS] [SEP] [MASK] " ]' \
  "special tokens not at BERT's ids"
check '[ "$(sort "$work/vocab.txt" | uniq -d | wc -l)" -eq 0 ]' "duplicate entries"
check 'grep -q "round trip on the training text: [0-9]* tokens, 0 \[UNK\]" "$work/report.txt"' \
  "trainer's round trip report: $(cat "$work/report.txt")"

"$loom" tokenize --vocab "$work/vocab.txt" <"$work/train.txt" >"$work/ids.txt"
check '[ "$(wc -l <"$work/ids.txt")" -eq "$(wc -l <"$work/train.txt")" ]' "tokenize output line count"
check '! grep -qE "(\[|, )100(,|\])" "$work/ids.txt"' "[UNK] (100) in the training text's ids"
check '[ "$(grep -c "^\[\]$" "$work/ids.txt")" -eq 0 ]' "a line tokenized to nothing"

"$loom" vocab train --input "$work/train.txt" --size 3000 --output "$work/again.txt" >/dev/null 2>&1
check 'cmp -s "$work/vocab.txt" "$work/again.txt"' "training twice gives different vocabularies"

echo "$((checks - failures)) passed, $failures failed"
[ "$failures" -eq 0 ]
