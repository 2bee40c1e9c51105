#!/usr/bin/env bash
# `loom tokenize` against Hugging Face: the committed fixture (tests/fixtures/tokenize/, made by
# tools/hf-parity/make_fixture.mjs with the Rust `tokenizers` library behind BertTokenizerFast) must
# be reproduced id for id, on adversarial Unicode and on real corpus lines. Also checks the verb's
# contract: empty lines, invalid UTF-8, --cased, and a clear error for a missing vocabulary.
# Usage: tokenize_hf_parity_test.sh LOOM FIXTURES_DIR VOCAB
set -uo pipefail
loom=$1
fixtures=$2/tokenize
vocab=$3
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$loom" tokenize --vocab "$vocab" <"$fixtures/hf_parity_input.txt" >"$work/out.txt" || fail "tokenize exited $?"
total=$(wc -l <"$fixtures/hf_parity_expected.txt")
mismatched=$(diff "$work/out.txt" "$fixtures/hf_parity_expected.txt" | grep -c '^<')
if [ "$mismatched" -ne 0 ]; then
  fail "$mismatched of $total lines differ from Hugging Face:"
  diff <(nl -ba "$work/out.txt") <(nl -ba "$fixtures/hf_parity_expected.txt") | head -20
else
  echo "hf parity: $total of $total lines identical"
fi

out=$(printf 'Hello, world!\n\n[CLS] x\xffy\n' | "$loom" tokenize --vocab "$vocab" 2>"$work/err.txt")
[ "$out" = $'[7592, 1010, 2088, 999]\n[]\n[101, 1060, 2100]' ] || fail "contract lines: $out"
grep -q "replaced 1 invalid UTF-8 sequence" "$work/err.txt" || fail "no replacement report: $(cat "$work/err.txt")"

out=$(printf 'Hello\n' | "$loom" tokenize --vocab "$vocab" --cased)
[ "$out" = "[100]" ] || fail "--cased keeps 'Hello', which the uncased vocabulary lacks: got $out"

out=$("$loom" tokenize --vocab "$work/missing.txt" </dev/null 2>&1); code=$?
[ $code -eq 2 ] || fail "missing vocab: exit $code, expected 2"
grep -q "missing.txt" <<<"$out" || fail "missing vocab message does not name the file: $out"

echo "$((5 - failures)) passed, $failures failed"
[ "$failures" -eq 0 ]
