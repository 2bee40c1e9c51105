#!/usr/bin/env bash
# Blocks built against SDK 0.3 load and train under this host: the bert plugin as released with
# SDK 0.3.0 (host/tests/data/sdk-0.3/libloom-bert.so, whose BlockSetup ends before config_json)
# takes the place of the current one, `loom plugins` names its SDK, and a short pre-training run on
# real text gives, step for step, the losses the current bert plugin gives (the blocks compute the
# same arithmetic; only the SDK around them changed). The SDK 0.3 layers do not accept packed
# tokens, so under the default `[model] unpadded = true` the host pads for them: the run equals the
# current plugin's run with `unpadded = false`.
# Usage: sdk_0_3_blocks_test.sh LOOM SOURCE_DIR
set -uo pipefail
loom=$1
src=$2
source "$(dirname "$0")/train_fixture.sh"

plugins=$(cd "$(dirname "$loom")/../lib/loom/plugins" && pwd)
old="$work/plugins-sdk-0.3"
mkdir -p "$old"
for plugin in "$plugins"/libloom-*.so; do
  [ "$(basename "$plugin")" = libloom-bert.so ] || ln -s "$plugin" "$old/"
done
cp "$src/host/tests/data/sdk-0.3/libloom-bert.so" "$old/"

"$loom" plugins --no-default-plugin-paths --plugin-path "$old" --json > "$work/plugins.json" 2> "$work/plugins.err" ||
  fail "loom plugins over the SDK 0.3 bert plugin: $(cat "$work/plugins.err")"
python3 - "$work/plugins.json" <<'PY' || fail "loom plugins does not list the SDK 0.3 bert plugin as loaded"
import json, sys
found = [p for p in json.load(open(sys.argv[1]))["plugins"] if p.get("name") == "bert"]
assert found and found[0].get("sdk_version") == "0.3.0", found
PY

write_recipe old 6 1 8
cp "$work/old.toml" "$work/current.toml"
sed -i 's|name = "old"|name = "current"|' "$work/current.toml"
sed -i 's|^\[model\]$|[model]\nunpadded = false|' "$work/current.toml"
"$loom" run "$work/old.toml" --no-default-plugin-paths --plugin-path "$old" > "$work/old.log" 2>&1 ||
  { tail -5 "$work/old.log"; fail "loom run with the SDK 0.3 bert plugin"; }
"$loom" run "$work/current.toml" > "$work/current.log" 2>&1 ||
  { tail -5 "$work/current.log"; fail "loom run with the current bert plugin"; }
same_losses "$work/runs/old/metrics.jsonl" "$work/runs/current/metrics.jsonl" 0 "SDK 0.3 blocks against current"

if [ $failures -ne 0 ]; then echo "$failures failed"; exit 1; fi
echo "SDK 0.3 blocks: all passed"
