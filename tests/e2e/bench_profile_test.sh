#!/usr/bin/env bash
# `loom bench --profile` on a micro-BERT classifier (tests/fixtures/train/micro-bert.json), a few
# steps: the JSON's "profile" holds, per op family, ms per step, calls per step and share of the
# step; GEMM, attention forward and backward, normalisation, element-wise, loss and optimizer are
# there with positive times and calls, shares are time over the phases' step and the families'
# times sum to no more than that step. With fused attention and without it (the unfused path's
# softmax counts as attention); on backend/cpu-opaque (device memory: the batch is an upload); the
# text report prints the table; without --profile there is no "profile"; --profile with
# --inference is a usage error. No timing is asserted beyond these sums.
# Usage: bench_profile_test.sh LOOM SOURCE_DIR OPAQUE_FIXTURE_DIR
set -uo pipefail
loom=$1
src=$2
opaque_dir=$3
work=$(mktemp -d /tmp/loom-bench-profile-XXXXXX)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

source "$(dirname "$0")/micro_classifier.sh"
micro_classifier_data
recipe() { # name backend fused-attention
  {
    micro_classifier_recipe "$1" 3
    cat <<TOML

[backend]
component = "$2"
threads = 1
$([ "$2" = cpu ] && echo "fused_attention = $3")

[schedule]
component = "constant"
TOML
  } > "$work/$1.toml"
}
recipe fused cpu true
recipe unfused cpu false
recipe opaque cpu-opaque false

# Checks one JSON report's profile: families, positive times and calls, shares, the sum.
check_profile() { # file required-families...
  /usr/bin/python3 - "$@" <<'PY'
import json, sys
path, required = sys.argv[1], sys.argv[2:]
r = json.load(open(path))
problems = []
profile = r.get("profile")
if not isinstance(profile, dict) or not profile:
    print(f"{path}: no profile object: {json.dumps(r)[:400]}"); sys.exit(1)
step = r["ms_per_step"]["total"]
for family in required:
    if family not in profile:
        problems.append(f"family {family} missing (have {sorted(profile)})")
total = 0.0
for family, row in profile.items():
    ms, calls, share = row.get("ms_per_step"), row.get("calls_per_step"), row.get("share_of_step")
    # A required family's ops take time; a 4-byte download may read as 0 on a coarse clock.
    if not (isinstance(ms, (int, float)) and (ms > 0 or (ms == 0 and family not in required))):
        problems.append(f"{family}: ms_per_step {ms} not positive")
    if not (isinstance(calls, (int, float)) and calls > 0): problems.append(f"{family}: calls_per_step {calls}")
    if not (isinstance(share, (int, float)) and 0 <= share <= 1): problems.append(f"{family}: share_of_step {share}")
    elif abs(share - ms / step) > 1e-9 * max(1.0, share): problems.append(f"{family}: share {share} is not {ms}/{step}")
    total += ms if isinstance(ms, (int, float)) else 0
if total > step * (1 + 1e-9):
    problems.append(f"the families' {total} ms exceed the step's {step} ms")
print(f"{path}: {len(profile)} families, {total:.3f} of {step:.3f} ms per step in ops: " +
      ", ".join(f"{f} {row['ms_per_step']:.3f}" for f, row in sorted(profile.items(), key=lambda x: -x[1]['ms_per_step'])))
for p in problems: print(f"{path}: {p}")
sys.exit(1 if problems else 0)
PY
}

core="gemm attention_forward attention_backward normalization elementwise embedding loss optimizer"
# 1. backend/cpu with fused attention, then with the unfused path.
for name in fused unfused; do
  "$loom" bench "$work/$name.toml" --steps 3 --warmup 1 --profile --json > "$work/$name.json" 2> "$work/$name.log" \
    || { cat "$work/$name.log"; fail "bench --profile ($name)"; continue; }
  check_profile "$work/$name.json" $core || fail "$name: profile"
done

# 2. backend/cpu-opaque: device memory, so the batch reaches it as an upload.
LOOM_PLUGIN_PATH=$opaque_dir "$loom" bench "$work/opaque.toml" --steps 2 --warmup 1 --profile --json \
  > "$work/opaque.json" 2> "$work/opaque.log" || { cat "$work/opaque.log"; fail "bench --profile on backend/cpu-opaque"; }
check_profile "$work/opaque.json" $core upload || fail "opaque: profile"

# 3. The text report prints the table; without --profile no profile is measured.
"$loom" bench "$work/fused.toml" --steps 2 --warmup 0 --profile > "$work/text.txt" 2> "$work/text.log" \
  || { cat "$work/text.log"; fail "bench --profile (text)"; }
for word in profile gemm attention_backward optimizer "between ops"; do
  grep -q "$word" "$work/text.txt" || fail "text report lacks '$word': $(cat "$work/text.txt")"
done
"$loom" bench "$work/fused.toml" --steps 2 --warmup 0 --json > "$work/plain.json" 2> "$work/plain.log" \
  || { cat "$work/plain.log"; fail "bench without --profile"; }
grep -q '"profile"' "$work/plain.json" && fail "bench without --profile printed a profile"

# 4. --profile times training steps: not with --inference.
if "$loom" bench "$work/fused.toml" --inference --profile > "$work/usage.txt" 2>&1; then
  fail "--profile --inference was accepted"
else
  grep -qi "excludes" "$work/usage.txt" || fail "--profile --inference: no reason given: $(cat "$work/usage.txt")"
fi

if [ $failures -ne 0 ]; then echo "$failures failed"; exit 1; fi
echo "bench --profile: all passed"
