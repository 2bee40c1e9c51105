#!/usr/bin/env bash
# The `loom` CLI as a user runs it: listing plugins, checking recipes, exit codes.
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
grep -q "^core " <<<"$out" || fail "plugins does not list core: $out"
grep -q "communicator/local" <<<"$out" || fail "plugins does not list communicator/local: $out"

out=$("$loom" plugins --json); code=$?
expect_code 0 $code "plugins --json"
grep -q '"name": "communicator/local"' <<<"$out" || fail "plugins --json lacks communicator/local"

out=$("$loom" check "$fixtures/valid.toml" 2>&1); code=$?
expect_code 0 $code "check valid.toml ($out)"

out=$("$loom" check "$fixtures/three_mistakes.toml" 2>&1); code=$?
expect_code 2 $code "check three_mistakes.toml"
f="$fixtures/three_mistakes.toml"
grep -qF "$f:4:1: run.sed: unknown key; did you mean 'seed'?" <<<"$out" || fail "missing unknown-key problem: $out"
grep -qF "$f:7:1: train.steps: expected an integer" <<<"$out" || fail "missing wrong-type problem: $out"
grep -qF "$f:10:1: communicator.component: no component communicator/locl" <<<"$out" || fail "missing component problem: $out"
grep -qF "3 problems in $f" <<<"$out" || fail "missing problem count: $out"

out=$("$loom" check "$fixtures/valid.toml" --set trian.steps=1 2>&1); code=$?
expect_code 2 $code "check with a bad --set"

out=$("$loom" run "$fixtures/valid.toml" 2>&1); code=$?
expect_code 2 $code "run of a recipe without [backend]"
grep -q "has no \[backend\] table" <<<"$out" || fail "run message: $out"

out=$("$loom" --plugin /nonexistent/libloom-x.so plugins 2>&1); code=$?
expect_code 3 $code "explicit missing plugin"

out=$("$loom" frobnicate 2>&1); code=$?
expect_code 2 $code "unknown verb"

if [ $failures -ne 0 ]; then echo "$failures failed"; exit 1; fi
echo "cli end-to-end: all passed"
