#!/usr/bin/env bash
# A plugin exports exactly `loom_plugin_query` and owns no STB_GNU_UNIQUE symbol (which would
# pin it in memory and can clash across plugins). Usage: check_plugin_exports.sh PLUGIN.so
set -euo pipefail
plugin=$1
exported=$(nm -D --defined-only "$plugin" | awk '{print $3}' | grep -v '^$' | sort)
if [ "$exported" != "loom_plugin_query" ]; then
  echo "FAIL: $plugin exports:"; echo "$exported"; exit 1
fi
unique=$(readelf --dyn-syms -W "$plugin" | grep -c UNIQUE || true)
if [ "$unique" != "0" ]; then
  echo "FAIL: $plugin has $unique STB_GNU_UNIQUE symbols"; exit 1
fi
echo "ok: $plugin exports only loom_plugin_query"
