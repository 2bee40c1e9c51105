#!/usr/bin/env bash
# Plugin files Loom cannot use, in every folder it searches (--plugin-path, the recipe's [plugins]
# paths, the user plugin folder): a file cut short (an interrupted copy, a full disk during
# install; mapped, it killed every command with SIGBUS), a file that is not ELF, a library that is
# not a Loom plugin, a folder named like a plugin, a second copy of an installed plugin. A scanned
# file is refused with its reason before the dynamic loader maps it: `loom plugins` lists it
# (exit 0) and every other command goes on with the plugins that load. Named with --plugin (or as
# a [plugins] path), the file is what the user asked for: an error naming it, exit 3. A plugin the
# recipe requires that is not found: exit 2 naming plugins.require. The installed plugins are
# left byte for byte as they were.
# Usage: plugins.sh LOOM SOURCE_DIR
set -euo pipefail
loom=$1
src=$2
source "$(dirname "$0")/lib.sh"
fixtures=$src/tests/fixtures
installed=$(dirname "$loom")/../lib/loom/plugins
local_plugin=$installed/libloom-comm-local.so
[ -f "$local_plugin" ] || { echo "FAIL: no $local_plugin to cut"; exit 1; }
size=$(stat -c %s "$local_plugin")
snapshot "$installed"

# scanned FILE REASON: FILE, alone in a scanned folder, is listed as refused with REASON (a regex) by
# `loom plugins` and `loom plugins --json`, warned about by `loom check`, which passes.
scanned() {
  local file=$1 reason=$2
  cases=$((cases + 1))
  expect_ok "$file: loom plugins" -- "$loom" --plugin-path "$work/plugins" plugins
  grep -qE "$(lit "refused $file: ")$reason" "$work/out" || fail "$file: not listed as refused ($reason): $(cat "$work/out")"
  grep -q "^comm-local " "$work/out" || fail "$file: the installed comm-local plugin is not listed: $(cat "$work/out")"
  expect_ok "$file: loom plugins --json" -- "$loom" --plugin-path "$work/plugins" plugins --json
  grep -qE "$reason" "$work/out" || fail "$file: plugins --json lacks the reason"
  expect_ok "$file: loom check" -- "$loom" --plugin-path "$work/plugins" check "$fixtures/valid.toml"
  grep -qF "refused plugin $file" "$work/err" || fail "$file: loom check does not warn: $(cat "$work/err")"
}
in_plugins() { rm -rf "$work/plugins"; mkdir -p "$work/plugins"; "$@"; }

# Cut inside the headers, the code, the data, just before the section table.
broken=$work/plugins/libloom-comm-local.so
for cut in 1000 $((size / 3)) $((size * 2 / 3)) $((size - 100)); do
  in_plugins sh -c "head -c $cut '$local_plugin' > '$broken'"
  scanned "$broken" "cannot be loaded: .*truncated or damaged"
done
# Named explicitly: exit 3, the file named.
expect_refusal 3 "$(lit "error: plugin $broken: cannot be loaded:")" -- "$loom" --plugin "$broken" plugins
# The same file found through the recipe's [plugins] paths and through the user plugin folder.
sed "s|^\[run\]|[plugins]\npaths = [\"$work/plugins\"]\n\n[run]|" "$fixtures/valid.toml" > "$work/with-paths.toml"
expect_ok "[plugins] paths" -- "$loom" check "$work/with-paths.toml"
grep -qF "refused plugin $broken" "$work/err" || fail "[plugins] paths: no refusal: $(cat "$work/err")"
mkdir -p "$work/home/.local/share/loom/plugins"
cp "$broken" "$work/home/.local/share/loom/plugins/"
expect_ok "user plugin folder" -- env -u XDG_DATA_HOME HOME="$work/home" "$loom" plugins
grep -qF "refused $work/home/.local/share/loom/plugins/libloom-comm-local.so: cannot be loaded" "$work/out" ||
  fail "user plugin folder: not listed as refused: $(cat "$work/out")"

# Not ELF; ELF but not a Loom plugin; a folder; a second copy of an installed plugin.
in_plugins sh -c "echo 'not a library' > '$work/plugins/libloom-text.so'"
scanned "$work/plugins/libloom-text.so" "cannot be loaded: invalid ELF header"
expect_refusal 3 "$(lit "error: plugin $work/plugins/libloom-text.so: cannot be loaded: invalid ELF header")" \
  -- "$loom" --plugin "$work/plugins/libloom-text.so" plugins
in_plugins cp "$loom" "$work/plugins/libloom-host.so"  # an executable named like a plugin
scanned "$work/plugins/libloom-host.so" "cannot be loaded: .*cannot dynamically load"
# A shared library of the system: no Loom entry point.
library=$( (ldconfig -p 2> /dev/null || true) | awk '/libz\.so\.1 / && !found {print $NF; found = 1}')
if [ -n "$library" ]; then
  in_plugins cp "$library" "$work/plugins/libloom-zlib.so"
  scanned "$work/plugins/libloom-zlib.so" "loom_plugin_query is not exported: not a Loom plugin"
fi
in_plugins mkdir "$work/plugins/libloom-folder.so"
scanned "$work/plugins/libloom-folder.so" "cannot be loaded: not a regular file"
in_plugins cp "$installed/libloom-optimizers.so" "$work/plugins/libloom-optimizers-copy.so"
expect_ok "a second copy" -- "$loom" --plugin-path "$work/plugins" plugins
grep -qF "plugin 'optimizers' is shadowed by $work/plugins/libloom-optimizers-copy.so" "$work/out" ||
  fail "the shadowed copy is not listed: $(cat "$work/out")"

# Named and missing: --plugin, a [plugins] path; a required plugin that no folder holds.
expect_refusal 3 "$(lit "error: plugin /nonexistent/libloom-x.so: no such plugin file")" \
  -- "$loom" --plugin /nonexistent/libloom-x.so plugins
sed "s|^\[run\]|[plugins]\npaths = [\"$work/none.so\"]\n\n[run]|" "$fixtures/valid.toml" > "$work/missing-path.toml"
expect_refusal 3 "$(lit "error: plugin $work/none.so: no such plugin file (No such file or directory); named by $work/missing-path.toml:2:1 (plugins.paths[0])")" \
  -- "$loom" check "$work/missing-path.toml"
sed "s|^\[run\]|[plugins]\nrequire = [\"nosuch\"]\n\n[run]|" "$fixtures/valid.toml" > "$work/require.toml"
expect_refusal 2 "$(lit "$work/require.toml:2:1: plugins.require: plugin 'nosuch' was not found")" \
  -- "$loom" check "$work/require.toml"

unchanged "$installed"
finish
