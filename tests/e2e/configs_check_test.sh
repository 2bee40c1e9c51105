#!/usr/bin/env bash
# Every shipped recipe (configs/**/*.toml) passes `loom check`. Usage: configs_check_test.sh LOOM SOURCE_DIR
set -uo pipefail
loom=$1
src=$2
cd "$src" || exit 1
# The recipes name the fetched vocabulary, which `loom check` verifies exists.
scripts/fetch-data > /dev/null 2>&1 || { echo "FAIL: scripts/fetch-data"; exit 1; }
# The quickstart's recipes name the vocabulary scripts/quickstart learns from the corpora.
scripts/quickstart-vocab "$loom" > /dev/null || { echo "FAIL: scripts/quickstart-vocab"; exit 1; }
failures=0
count=0
while IFS= read -r recipe; do
  count=$((count + 1))
  out=$("$loom" check "$recipe" 2>&1) || { echo "FAIL: $recipe"; echo "$out"; failures=$((failures + 1)); }
done < <(find configs -name '*.toml' | sort)
[ $count -gt 0 ] || { echo "FAIL: no recipes found"; exit 1; }
echo "$count recipes checked, $failures failed"
[ $failures -eq 0 ]
