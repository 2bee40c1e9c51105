#!/usr/bin/env bash
# Every shipped recipe (configs/**/*.toml) passes `loom check`, and, when this build has
# backend/cuda, passes it again with only `backend.component = "cuda"` changed (how docs/gpu.md
# says to run a recipe on a GPU; `loom check` validates options without touching a device).
# Usage: configs_check_test.sh LOOM SOURCE_DIR
set -uo pipefail
loom=$1
src=$2
cd "$src" || exit 1
# The recipes name the fetched vocabulary, which `loom check` verifies exists.
scripts/fetch-data > /dev/null 2>&1 || { echo "FAIL: scripts/fetch-data"; exit 1; }
# The quickstart's recipes name the vocabularies scripts/quickstart learns from the corpora (the
# GPU quickstart's from data/raw and data/raw-extra).
scripts/quickstart-vocab "$loom" > /dev/null || { echo "FAIL: scripts/quickstart-vocab"; exit 1; }
scripts/quickstart-vocab --gpu "$loom" > /dev/null || { echo "FAIL: scripts/quickstart-vocab --gpu"; exit 1; }
failures=0
count=0
backends=(cpu)
"$loom" plugins 2>/dev/null | grep -q "backend/cuda" && backends+=(cuda)
while IFS= read -r recipe; do
  count=$((count + 1))
  for backend in "${backends[@]}"; do
    out=$("$loom" check "$recipe" --set backend.component=$backend 2>&1) ||
      { echo "FAIL: $recipe (backend $backend)"; echo "$out"; failures=$((failures + 1)); }
  done
done < <(find configs -name '*.toml' | sort)
echo "backends checked: ${backends[*]}"
[ $count -gt 0 ] || { echo "FAIL: no recipes found"; exit 1; }
echo "$count recipes checked, $failures failed"
[ $failures -eq 0 ]
