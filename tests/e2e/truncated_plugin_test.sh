#!/usr/bin/env bash
# A plugin file cut short (an interrupted copy, a full disk during install) in any folder Loom
# searches — --plugin-path, the recipe's [plugins] paths, the user plugin folder — is refused with
# its reason before the dynamic loader maps it: `loom plugins` lists it as refused, and every other
# command goes on with the plugins that load. (Mapped, it killed every command with SIGBUS.)
# A truncated file named with --plugin is an error naming the file (exit 3).
# Usage: truncated_plugin_test.sh LOOM FIXTURES_DIR
set -uo pipefail
loom=$1
fixtures=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

core=$(dirname "$loom")/../lib/loom/plugins/libloom-core.so
[ -f "$core" ] || { echo "FAIL: no $core to cut"; exit 1; }
size=$(stat -c %s "$core")

# Several cuts: inside the headers, the code, the data, just before the section table.
for cut in 1000 $((size / 3)) $((size * 2 / 3)) $((size - 100)); do
  rm -rf "$work/plugins"; mkdir -p "$work/plugins"
  head -c $cut "$core" > "$work/plugins/libloom-core.so"
  broken="$work/plugins/libloom-core.so"

  out=$("$loom" --plugin-path "$work/plugins" plugins 2> "$work/err"); code=$?
  [ $code -eq 0 ] || fail "cut at $cut: loom plugins exited $code: $(cat "$work/err")"
  grep -qF "refused $broken: cannot be loaded:" <<<"$out" || fail "cut at $cut: not listed as refused: $out"
  grep -qF "truncated or damaged" <<<"$out" || fail "cut at $cut: no reason given: $out"
  grep -q "^core " <<<"$out" || fail "cut at $cut: the installed core plugin is not listed: $out"

  out=$("$loom" --plugin-path "$work/plugins" plugins --json 2> /dev/null); code=$?
  [ $code -eq 0 ] || fail "cut at $cut: loom plugins --json exited $code"
  grep -qF "truncated or damaged" <<<"$out" || fail "cut at $cut: plugins --json lacks the reason"

  out=$("$loom" --plugin-path "$work/plugins" check "$fixtures/valid.toml" 2>&1); code=$?
  [ $code -eq 0 ] || fail "cut at $cut: loom check exited $code: $out"
  grep -qF "refused plugin $broken" <<<"$out" || fail "cut at $cut: loom check does not warn: $out"
done

# The same file found through the recipe's [plugins] paths and through the user plugin folder.
sed "s|^\[run\]|[plugins]\npaths = [\"$work/plugins\"]\n\n[run]|" "$fixtures/valid.toml" > "$work/with-paths.toml"
out=$("$loom" check "$work/with-paths.toml" 2>&1); code=$?
[ $code -eq 0 ] || fail "[plugins] paths: loom check exited $code: $out"
grep -qF "refused plugin $broken" <<<"$out" || fail "[plugins] paths: no refusal: $out"

mkdir -p "$work/home/.local/share/loom/plugins"
cp "$broken" "$work/home/.local/share/loom/plugins/"
out=$(env -u XDG_DATA_HOME HOME="$work/home" "$loom" plugins 2> /dev/null); code=$?
[ $code -eq 0 ] || fail "user plugin folder: loom plugins exited $code"
grep -qF "refused $work/home/.local/share/loom/plugins/libloom-core.so: cannot be loaded" <<<"$out" \
  || fail "user plugin folder: not listed as refused: $out"

# Named explicitly, the file is what the user asked for: an error naming it, exit 3.
out=$("$loom" --plugin "$broken" plugins 2>&1); code=$?
[ $code -eq 3 ] || fail "--plugin: exit code $code, expected 3: $out"
grep -qF "error: plugin $broken: cannot be loaded:" <<<"$out" || fail "--plugin: the file is not named: $out"

[ $failures -eq 0 ] && echo "truncated plugins: refused with their reason, other commands unaffected"
exit $((failures > 0))
