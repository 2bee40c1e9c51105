#!/usr/bin/env bash
# How libloom-fixture-sdk-0.2.so was built (once, with Debian 12's g++ 12 and Loom SDK 0.2.0),
# with the flags loom_add_plugin() uses. Kept for the record: the committed binary is the fixture
# and must not be rebuilt with a later SDK (the script refuses when the SDK is no longer 0.2.0).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
sdk=$(cd "$here/../../../../sdk/include" && pwd)
grep -q 'kSdkVersion = "0.2.0"' "$sdk/loom/sdk/version.hpp" ||
  { echo "build-fixture.sh: the SDK is no longer 0.2.0; keep the committed binary" >&2; exit 1; }
map=$(mktemp)
trap 'rm -f "$map"' EXIT
printf '{\n  global: loom_plugin_query;\n  local: *;\n};\n' > "$map"
g++ -std=c++17 -O2 -fPIC -shared -fvisibility=hidden -fvisibility-inlines-hidden -fno-gnu-unique \
  -Wall -Wextra -Werror -I "$sdk" "$here/fixture_sdk_0_2.cpp" -o "$here/libloom-fixture-sdk-0.2.so" \
  -Wl,--exclude-libs,ALL -Wl,--version-script="$map" -Wl,-z,defs -s
