#!/usr/bin/env bash
# How libloom-bert.so here was made (once): the bert plugin (plugins/bert) as released with Loom SDK
# 0.3.0 (ABI 0.3), built by the release preset with Debian 12's g++ 12 and stripped. It is the
# fixture that proves BERT blocks built against SDK 0.3 — whose BlockSetup ends before
# `config_json` — still load and train under a later host (tests/e2e/sdk_0_3_blocks_test.sh).
# Kept for the record: the committed binary is the fixture and must not be rebuilt with a later
# SDK (the script refuses when the SDK is no longer 0.3.0).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
grep -q 'kSdkVersion = "0.3.0"' "$root/sdk/include/loom/sdk/version.hpp" ||
  { echo "build-fixture.sh: the SDK is no longer 0.3.0; keep the committed binary" >&2; exit 1; }
cmake --preset release -S "$root"
cmake --build "$root/build" --target loom_plugin_bert
strip -o "$here/libloom-bert.so" "$root/build/lib/loom/plugins/libloom-bert.so"
