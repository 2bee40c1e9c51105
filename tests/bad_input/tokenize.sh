#!/usr/bin/env bash
# `loom tokenize` on input it cannot read or that is not clean text: a vocabulary that is missing
# or a folder, a folder on standard input, an unknown option — exit 2 naming it; text with invalid
# UTF-8, NUL bytes, CR line ends or a megabyte without a newline is tokenized as Hugging Face
# does (exit 0, one line of ids per input line), invalid UTF-8 counted on standard error.
# (Vocabularies without [UNK] or empty ones: vocab.sh; standard output into /dev/full: outputs.sh.)
# Usage: tokenize.sh LOOM SOURCE_DIR
set -euo pipefail
loom=$1
src=$2
source "$(dirname "$0")/lib.sh"
vocab=$glue/vocab.txt
tokenize() { # INPUT_FILE [ARGS...]
  "$loom" tokenize "${@:2}" < "$1"
}
echo "the cat sat" > "$work/line.txt"
expect_ok "tokenize a line" -- tokenize "$work/line.txt" --vocab "$vocab"
[ "$(cat "$work/out")" = "[126, 20, 1]" ] || fail "the fixture line tokenizes to $(cat "$work/out")"

expect_refusal 2 "$(lit "--vocab: File does not exist: $work/none.txt")" -- tokenize "$work/line.txt" --vocab "$work/none.txt"
expect_refusal 2 "$(lit "--vocab: File is actually a directory: $work")" -- tokenize "$work/line.txt" --vocab "$work"
expect_refusal 2 "The following argument was not expected: --cassed" -- tokenize "$work/line.txt" --vocab "$vocab" --cassed
# A folder on standard input reads as no lines: it printed nothing, exit 0.
expect_refusal 2 "standard input is a folder" -- tokenize "$work" --vocab "$vocab"

# Not clean text, tokenized anyway: every input line gives one line of ids.
printf 'ok \xff\xfe bad\na\0b\r\nthe cat\r\n' > "$work/dirty.txt"
expect_ok "dirty text" -- tokenize "$work/dirty.txt" --vocab "$vocab"
[ "$(wc -l < "$work/out")" -eq 3 ] || fail "dirty text: $(wc -l < "$work/out") lines of ids for 3 lines: $(cat "$work/out")"
grep -qF "loom tokenize: replaced 2 invalid UTF-8 sequences" "$work/err" || fail "invalid UTF-8 not counted: $(cat "$work/err")"
[ "$(sed -n 3p "$work/out")" = "[126, 20]" ] || fail "a CRLF line: $(sed -n 3p "$work/out")"
head -c 1000000 /dev/zero | tr '\0' 'a' > "$work/long.txt"
expect_ok "a megabyte without a newline" -- tokenize "$work/long.txt" --vocab "$vocab"
[ "$(wc -l < "$work/out")" -eq 1 ] || fail "a megabyte without a newline: $(wc -l < "$work/out") lines"
finish
