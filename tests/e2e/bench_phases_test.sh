#!/usr/bin/env bash
# `loom bench` times train_step(), the step `loom run` takes, phase by phase: on a micro-BERT
# classifier on backend/cpu, ms_per_step holds data, upload, forward, backward, communication and
# optimizer; "total" is their sum; and that sum is within 5% of "step", the time per step of the
# loop that runs train_step() without phase timers (on the CPU the phase waits cost nothing, so the
# phases must cover the whole step and nothing else). Timing on a shared machine is noisy: the
# comparison gets three tries, each of about a second per loop, and passes when one is within 5%.
# With train.grad_accumulation = 2 a step trains on two batches, as in a run. --layouts times
# training and inference requests unpadded and padded on batches of mixed lengths.
# Usage: bench_phases_test.sh LOOM SOURCE_DIR
set -uo pipefail
loom=$1
src=$2
work=$(mktemp -d /tmp/loom-bench-phases-XXXXXX)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

source "$(dirname "$0")/micro_classifier.sh"
micro_classifier_data
recipe() { # name grad-accumulation
  {
    micro_classifier_recipe "$1" 5
    cat <<TOML

[backend]
component = "cpu"
threads = 1

[schedule]
component = "linear-warmup"
warmup = 0.1

[train]
grad_accumulation = $2
TOML
  } > "$work/$1.toml"
}
recipe plain 1
recipe accumulated 2

# 1. The phases, their sum, and the sum against the untimed loop's step.
within=0
for attempt in 1 2 3; do
  "$loom" bench "$work/plain.toml" --steps 800 --warmup 50 --json > "$work/plain.json" 2> "$work/plain.log" \
    || { cat "$work/plain.log"; fail "bench (attempt $attempt)"; break; }
  /usr/bin/python3 - "$work/plain.json" "$attempt" <<'PY'
import json, sys
ms = json.load(open(sys.argv[1]))["ms_per_step"]
phases = ["data", "upload", "forward", "backward", "communication", "optimizer"]
missing = [p for p in phases + ["total", "step"] if p not in ms]
if missing:
    print(f"ms_per_step lacks {missing}: {ms}"); sys.exit(2)
if any(ms[p] < 0 for p in phases):
    print(f"a negative phase: {ms}"); sys.exit(2)
total = sum(ms[p] for p in phases)
if abs(total - ms["total"]) > 1e-9 * max(1.0, total):
    print(f"the phases sum to {total}, not to total {ms['total']}"); sys.exit(2)
ratio = ms["total"] / ms["step"]
print(f"attempt {sys.argv[2]}: phases {ms['total']:.4f} ms, step {ms['step']:.4f} ms, ratio {ratio:.4f}; " +
      ", ".join(f"{p} {ms[p]:.4f}" for p in phases))
sys.exit(0 if abs(ratio - 1) <= 0.05 else 1)
PY
  case $? in
    0) within=1; break ;;
    1) ;;
    *) fail "ms_per_step (attempt $attempt)"; break ;;
  esac
done
[ $within -eq 1 ] || fail "the phases did not add up to the step within 5% in three tries"

# 2. Gradient accumulation: a step of the accumulated recipe trains on two batches of 4.
"$loom" bench "$work/accumulated.toml" --steps 10 --warmup 1 --json > "$work/accumulated.json" \
  2> "$work/accumulated.log" || { cat "$work/accumulated.log"; fail "bench with grad_accumulation 2"; }
/usr/bin/python3 - "$work/accumulated.json" <<'PY' || fail "grad_accumulation 2: sequences per step"
import json, sys
r = json.load(open(sys.argv[1]))
per_step = r["train_sequences_per_second"] * r["ms_per_step"]["step"] / 1e3
print(f"grad_accumulation {r['grad_accumulation']}: {per_step:.3f} sequences per step")
sys.exit(0 if r["grad_accumulation"] == 2 and abs(per_step - 8) < 1e-6 else 1)
PY

# 3. --layouts on sentences of 2 to 24 words: training and inference each timed unpadded and
# padded, with the padding share of their batches (the inference requests are one batch, so both
# layouts report the same share, and it is the batch's).
printf 'label\ttext\n' > "$work/mixed.tsv"
for i in $(seq 1 24); do
  printf '%s\t%s\n' "$(echo a b c | cut -d' ' -f$(( i % 3 + 1 )))" "$(seq -s ' ' 1 $(( (i * 7) % 23 + 2 )) | sed 's/[0-9]*/word/g')" \
    >> "$work/mixed.tsv"
done
sed -e "s|$work/three.tsv|$work/mixed.tsv|" -e 's|name = "plain"|name = "layouts"|' "$work/plain.toml" > "$work/layouts.toml"
"$loom" bench "$work/layouts.toml" --layouts --steps 4 --warmup 1 --json > "$work/layouts.json" 2> "$work/layouts.log" ||
  { cat "$work/layouts.log"; fail "bench --layouts"; }
/usr/bin/python3 - "$work/layouts.json" <<'PY' || fail "bench --layouts: the layouts' figures"
import json, sys
r = json.load(open(sys.argv[1]))["layouts"]
for part in (r, r["inference"]):
    for layout in ("unpadded", "padded"):
        t = part[layout]
        assert t["real_tokens_per_second"] > 0 and t["sequences_per_second"] > 0, (layout, t)
        assert 0.2 < t["padding_share"] < 0.9, (layout, t)
    assert part["speedup"] > 0, part
i = r["inference"]
assert i["unpadded"]["padding_share"] == i["padded"]["padding_share"], i
print(f"layouts: training {r['speedup']:.2f}x at {100 * r['padded']['padding_share']:.0f}% padding, "
      f"inference {i['speedup']:.2f}x at {100 * i['padded']['padding_share']:.0f}%")
PY

if [ $failures -ne 0 ]; then echo "$failures failed"; exit 1; fi
echo "bench phases: all passed"
