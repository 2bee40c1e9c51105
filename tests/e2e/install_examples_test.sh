#!/usr/bin/env bash
# The installed SDK end to end: `cmake --install` into a temporary prefix (layout, one exported
# symbol per plugin, relocatable from two prefixes), then both example plugins built from outside
# the tree with find_package(LoomSDK) only, their tests, `loom plugins` finding them through
# --plugin-path, LOOM_PLUGIN_PATH and the user directory, and their recipes run for a few steps.
# Usage: install_examples_test.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$(realpath "$1")
src=$2
work=$(mktemp -d /tmp/loom-install-test-XXXXXX)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
run_logged() { # log command...: runs it, prints the log's tail on failure
  local log=$1; shift
  if ! "$@" > "$log" 2>&1; then tail -30 "$log"; return 1; fi
}
# A user with no plugins of their own and no search path from the environment.
export HOME=$work/home XDG_DATA_HOME=$work/home/.local/share
unset LOOM_PLUGIN_PATH LOOM_PLUGIN_PATH_ONLY
mkdir -p "$HOME"

"$src/scripts/fetch-data" > "$work/fetch.log" 2>&1 || { echo "fetch-data failed:"; tail -5 "$work/fetch.log"; exit 1; }
vocab=$src/data/vocab/bert-base-uncased.txt

prefix=$work/first-prefix
run_logged "$work/install.log" cmake --install "$build" --prefix "$prefix" || { echo "FAIL: cmake --install"; exit 1; }
for path in bin/loom include/loom/sdk/plugin.hpp include/loom/sdk/plugin_abi.h \
            lib/cmake/LoomSDK/LoomSDKConfig.cmake lib/cmake/LoomSDK/LoomSDKConfigVersion.cmake \
            lib/cmake/LoomSDK/LoomSDKTargets.cmake lib/cmake/LoomSDK/LoomAddPlugin.cmake \
            share/loom/configs/quickstart/finetune-spam.toml share/loom/configs/models/bert-tiny.json \
            share/doc/loom/plugins.md share/doc/loom/README.md \
            share/loom/examples/lion-optimizer/CMakeLists.txt share/loom/examples/jsonl-mlm-dataset/CMakeLists.txt; do
  [ -e "$prefix/$path" ] || fail "installed tree lacks $path"
done
installed_plugins=$(find "$prefix/lib/loom/plugins" -name 'libloom-*.so' | sort)
[ "$(echo "$installed_plugins" | grep -c .)" -ge 6 ] || fail "too few installed plugins: $installed_plugins"
for plugin in $installed_plugins; do
  bash "$src/tests/check_plugin_exports.sh" "$plugin" > /dev/null || fail "$plugin exports more than loom_plugin_query"
done
# Test plugins (host/tests/fixtures, build/test-plugins) never ship; the GPU check kit's test data under
# share/loom/tests does (packaging/gpu_check_kit.cmake).
[ -z "$(find "$prefix" -path '*/test-plugins/*' -o -name 'libloom-fixture*' | head -1)" ] || fail "test fixture plugins were installed"

# Relocatable: the same tree answers from its first prefix and, moved, from a second one.
"$prefix/bin/loom" plugins > "$work/plugins-first.txt" 2>&1 || fail "loom plugins from the first prefix"
grep -q "$prefix/lib/loom/plugins/libloom-wordpiece.so" "$work/plugins-first.txt" ||
  fail "first prefix: wordpiece not found under $prefix"
moved=$work/second/prefix
mkdir -p "$work/second" && mv "$prefix" "$moved"
prefix=$moved
"$prefix/bin/loom" plugins > "$work/plugins-second.txt" 2>&1 || fail "loom plugins from the moved prefix"
grep -q "$prefix/lib/loom/plugins/libloom-wordpiece.so" "$work/plugins-second.txt" ||
  { cat "$work/plugins-second.txt"; fail "moved prefix: wordpiece not found under $prefix"; }

# The version file: SDK 0.5 is found, a request for 0.6 is refused.
mkdir -p "$work/needs-0.6"
printf 'cmake_minimum_required(VERSION 3.25)\nproject(p LANGUAGES CXX)\nfind_package(LoomSDK 0.6 REQUIRED)\n' \
  > "$work/needs-0.6/CMakeLists.txt"
if cmake -S "$work/needs-0.6" -B "$work/needs-0.6/build" -DCMAKE_PREFIX_PATH="$prefix" > "$work/needs.log" 2>&1; then
  fail "find_package(LoomSDK 0.6) accepted SDK 0.5"
fi
grep -q "0.5.0" "$work/needs.log" || fail "the version refusal does not name the installed version"

# Both examples, copied out of the source tree, built against the installed SDK only.
for example in lion-optimizer jsonl-mlm-dataset; do
  cp -r "$src/examples/$example" "$work/$example"
  rm -rf "$work/$example/build"
  run_logged "$work/$example-configure.log" cmake -S "$work/$example" -B "$work/$example/build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" || { fail "$example: configure"; continue; }
  run_logged "$work/$example-build.log" cmake --build "$work/$example/build" -j2 || { fail "$example: build"; continue; }
  run_logged "$work/$example-ctest.log" ctest --test-dir "$work/$example/build" --output-on-failure ||
    fail "$example: its own tests"
done
lion_dir=$work/lion-optimizer/build/lib/loom/plugins
jsonl_dir=$work/jsonl-mlm-dataset/build/lib/loom/plugins
for plugin in "$lion_dir/libloom-lion.so" "$jsonl_dir/libloom-jsonl-mlm.so"; do
  bash "$src/tests/check_plugin_exports.sh" "$plugin" > /dev/null || fail "$plugin exports more than loom_plugin_query"
done

# The three ways to load them: --plugin-path, LOOM_PLUGIN_PATH, the user directory.
"$prefix/bin/loom" plugins --plugin-path "$lion_dir" --plugin-path "$jsonl_dir" > "$work/p1.txt" 2>&1
grep -q "optimizer/lion" "$work/p1.txt" && grep -q "dataset/jsonl-mlm" "$work/p1.txt" ||
  { cat "$work/p1.txt"; fail "loom plugins --plugin-path does not list optimizer/lion and dataset/jsonl-mlm"; }
LOOM_PLUGIN_PATH="$lion_dir:$jsonl_dir" "$prefix/bin/loom" plugins > "$work/p2.txt" 2>&1
grep -q "optimizer/lion" "$work/p2.txt" && grep -q "dataset/jsonl-mlm" "$work/p2.txt" ||
  fail "LOOM_PLUGIN_PATH does not bring in the examples"
mkdir -p "$XDG_DATA_HOME/loom/plugins"
cp "$lion_dir/libloom-lion.so" "$jsonl_dir/libloom-jsonl-mlm.so" "$XDG_DATA_HOME/loom/plugins/"
"$prefix/bin/loom" plugins > "$work/p3.txt" 2>&1
grep -q "optimizer/lion" "$work/p3.txt" && grep -q "dataset/jsonl-mlm" "$work/p3.txt" ||
  fail "the user plugin directory does not bring in the examples"
rm -rf "$XDG_DATA_HOME/loom/plugins"

# Their recipes, as installed (model.config resolves to share/loom/configs), for a few steps.
steps=(--set train.steps=3 --set train.log_every=1 --set train.eval_every=0 --set checkpoint.every=3
       --set run.output_dir="$work/runs" --set backend.threads=2 --set tokenizer.vocab="$vocab")
recipes=$prefix/share/loom/examples
"$prefix/bin/loom" run "$recipes/lion-optimizer/lion-finetune-spam.toml" --plugin-path "$lion_dir" "${steps[@]}" \
  --set data.file="$src/data/tasks/spam/train.tsv" --set run.name=lion > "$work/lion-run.log" 2>&1 ||
  { tail -20 "$work/lion-run.log"; fail "the Lion recipe did not run"; }
"$prefix/bin/loom" run "$recipes/jsonl-mlm-dataset/jsonl-pretrain.toml" --plugin-path "$jsonl_dir" "${steps[@]}" \
  --set data.file="$src/examples/jsonl-mlm-dataset/data/moby-dick-1-3.jsonl" --set run.name=jsonl \
  > "$work/jsonl-run.log" 2>&1 || { tail -20 "$work/jsonl-run.log"; fail "the JSON-lines recipe did not run"; }
for run in lion jsonl; do
  metrics=$work/runs/$run/metrics.jsonl
  last=$(grep '"loss"' "$metrics" 2>/dev/null | tail -1)
  echo "$run: $last"
  echo "$last" | grep -q '"step":3' || fail "$run: metrics.jsonl does not reach step 3"
  echo "$last" | grep -Eq '"loss":[0-9]' || fail "$run: no finite loss at step 3: $last"
done
# The Lion run's optimizer state is Lion's (exp_avg only, no AdamW exp_avg_sq).
state=$(find "$work/runs/lion" -name 'optimizer.safetensors' | head -1)
[ -n "$state" ] && head -c 4096 "$state" | grep -aq '"exp_avg"' && ! head -c 4096 "$state" | grep -aq exp_avg_sq ||
  fail "the Lion run's checkpoint does not hold Lion's state ($state)"

if [ $failures -gt 0 ]; then echo "$failures failure(s)"; exit 1; fi
echo "ok: installed SDK, both examples built out of tree, loaded three ways, recipes ran"
