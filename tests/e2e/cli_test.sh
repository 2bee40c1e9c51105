#!/usr/bin/env bash
# The `loom` CLI as a user runs it: listing plugins, checking a recipe, exit codes. Malformed
# recipes and plugin files are the bad-input suite's (tests/bad_input/).
# Usage: cli_test.sh LOOM FIXTURES_DIR
set -uo pipefail
loom=$1
fixtures=$2
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
expect_code() { # expected actual what
  [ "$1" = "$2" ] || fail "$3: exit code $2, expected $1"
}

out=$("$loom" --version); code=$?
expect_code 0 $code "--version"
[[ "$out" == loom\ 0.* ]] || fail "--version printed '$out'"

out=$("$loom" plugins); code=$?
expect_code 0 $code "plugins"
grep -q "^comm-local " <<<"$out" || fail "plugins does not list comm-local: $out"
grep -q "communicator/local" <<<"$out" || fail "plugins does not list communicator/local: $out"

out=$("$loom" plugins --json); code=$?
expect_code 0 $code "plugins --json"
grep -q '"name": "communicator/local"' <<<"$out" || fail "plugins --json lacks communicator/local"

out=$("$loom" check "$fixtures/valid.toml" 2>&1); code=$?
expect_code 0 $code "check valid.toml ($out)"

out=$("$loom" frobnicate 2>&1); code=$?
expect_code 2 $code "unknown verb"

if [ $failures -ne 0 ]; then echo "$failures failed"; exit 1; fi
echo "cli end-to-end: all passed"
