#!/usr/bin/env bash
# `loom bench`'s account of device memory by class (host/train/memory_account.hpp) on a micro-BERT
# classifier in bf16-mixed with AdamW: on backend/cpu-opaque (a device whose every allocation the
# host makes) and on backend/cpu the classes sum to exactly what the backend's allocator reports as
# requested at its peak ("backend_own" 0), the rounding is under 64 bytes per allocation, and the
# classes keep their ratios (master weights = gradients = 2 × the bf16 parameters, AdamW's moments
# = 2 × gradients); `bench --memory` computes the same classes without training; the text reports
# print them; --memory with --profile or --inference is a usage error.
# Usage: bench_memory_account_test.sh LOOM SOURCE_DIR OPAQUE_FIXTURE_DIR
set -uo pipefail
loom=$1
src=$2
opaque_dir=$3
work=$(mktemp -d /tmp/loom-bench-memory-XXXXXX)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
export LOOM_PLUGIN_PATH=$opaque_dir

source "$(dirname "$0")/micro_classifier.sh"
micro_classifier_data
recipe() { # name backend
  {
    micro_classifier_recipe "$1" 7
    cat <<TOML

[backend]
component = "$2"
threads = 1

[precision]
component = "bf16-mixed"

[schedule]
component = "constant"
TOML
  } > "$work/$1.toml"
}
recipe opaque cpu-opaque
recipe cpu cpu

check_account() { # measured.json [memory-only.json]
  /usr/bin/python3 - "$@" <<'PY'
import json, sys
classes = ["parameters", "master_weights", "optimizer_state", "gradients", "saved_activations",
           "saved_attention", "workspaces", "batch"]
path = sys.argv[1]
m = json.load(open(path))["device_memory"]
problems = []
for c in classes:
    if not isinstance(m.get(c), int) or m[c] < 0: problems.append(f"{c} = {m.get(c)}")
if problems:
    print(f"{path}: {problems}: {m}"); sys.exit(1)
if sum(m[c] for c in classes) != m["accounted"]: problems.append("the classes do not sum to accounted")
b = m.get("backend")
if not b: problems.append("no backend figures")
else:
    if m["backend_own"] != 0 or b["peak_requested"] != m["accounted"]:
        problems.append(f"accounted {m['accounted']} but the backend's peak request is {b['peak_requested']}")
    if b["requested"] != b["peak_requested"]: problems.append("a transient allocation")
    if not 0 <= m["allocator_rounding"] < 64 * 16: problems.append(f"rounding {m['allocator_rounding']}")
if not (m["master_weights"] == m["gradients"] == 2 * m["parameters"]):
    problems.append("bf16 parameters, f32 master weights and gradients out of ratio")
if m["optimizer_state"] != 2 * m["gradients"]: problems.append("AdamW's two moments are not 2 × gradients")
if m["saved_attention"] <= 0 or m["saved_activations"] <= 0: problems.append("no saved activations")
print(f"{path}: " + ", ".join(f"{c} {m[c]}" for c in classes) +
      f"; accounted {m['accounted']}, backend peak requested {b['peak_requested'] if b else None}")
if len(sys.argv) > 2:
    only = json.load(open(sys.argv[2]))["device_memory"]
    differ = [c for c in classes if only.get(c) != m[c]]
    if differ: problems.append(f"--memory differs in {differ}: {only}")
    if "backend" in only: problems.append("--memory reported backend figures without allocating")
for p in problems: print(f"{path}: {p}")
sys.exit(1 if problems else 0)
PY
}

for name in opaque cpu; do
  "$loom" bench "$work/$name.toml" --steps 2 --warmup 1 --json > "$work/$name.json" 2> "$work/$name.log" \
    || { cat "$work/$name.log"; fail "bench ($name)"; continue; }
  "$loom" bench "$work/$name.toml" --memory --json > "$work/$name-only.json" 2> "$work/$name-only.log" \
    || { cat "$work/$name-only.log"; fail "bench --memory ($name)"; continue; }
  check_account "$work/$name.json" "$work/$name-only.json" || fail "$name: account"
done

"$loom" bench "$work/opaque.toml" --memory > "$work/only.txt" 2> "$work/only.log" \
  || { cat "$work/only.log"; fail "bench --memory (text)"; }
for words in "attention's saved state" "optimizer state" "accounted" "optimizer step on the backend"; do
  grep -q "$words" "$work/only.txt" || fail "--memory text lacks '$words': $(cat "$work/only.txt")"
done
"$loom" bench "$work/opaque.toml" --steps 1 --warmup 0 > "$work/bench.txt" 2> "$work/bench.log" \
  || { cat "$work/bench.log"; fail "bench (text)"; }
for words in "device memory by class" "master weights" "the backend at its peak"; do
  grep -q "$words" "$work/bench.txt" || fail "bench text lacks '$words': $(cat "$work/bench.txt")"
done
for other in --profile --inference; do
  if "$loom" bench "$work/opaque.toml" --memory $other > "$work/usage.txt" 2>&1; then
    fail "--memory $other was accepted"
  fi
done

if [ $failures -ne 0 ]; then echo "$failures failed"; exit 1; fi
echo "bench memory account: all passed"
