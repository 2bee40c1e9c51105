#!/usr/bin/env bash
# Training on a GPU (label gpu): backend/cuda against backend/cpu, end to end.
#   1. `loom debug-step --backend cuda` on every PyTorch parity fixture (BERT's and ModernBERT's),
#      fp32 and bf16-mixed, within the bounds the CPU meets (tests/parity/CMakeLists.txt);
#      and, on every fixture whose batch has padding, unpadded against padded on the device (the
#      packed attention and rotary ops) within 1e-5 / 1e-5 / 1e-4;
#   2. 50 steps of bert-tiny from the same seed with dropout on, fp32, tf32 off: every step's loss
#      within 1e-4 relative of the CPU run (same Philox dropout bits on both);
#   3. fp16-mixed with an initial loss scale of 1e30: the first steps overflow, are skipped and the
#      scale backs off, on the GPU;
#   4. a checkpoint written on the GPU resumes on the CPU and the reverse: the continued losses
#      agree with the uninterrupted run within 1e-4 relative.
# Usage: gpu_training_test.sh LOOM COMPARE_PARITY SOURCE_DIR [BACKEND]. BACKEND defaults to cuda;
# passing cpu runs the same script against the CPU (a check of the script itself). Exit 77 (CTest:
# skipped) with the reason printed when the backend cannot run here (no GPU); exit 1 instead under
# LOOM_REQUIRE_GPU=1 (tests/gpu/gpu_requirement.sh).
set -uo pipefail
loom=$1
compare=$2
src=$3
device=${4:-cuda}
source "$(dirname "$0")/../gpu/gpu_requirement.sh"
tiny="$src/configs/models/bert-tiny.json"

# Does backend/$device work on this machine? One debug-step on the first parity fixture (no data
# needed), before any shard is made, so a machine without a GPU skips (or, under
# LOOM_REQUIRE_GPU=1, fails) at once.
probe=$(mktemp -d /tmp/loom-gpu-probe-XXXXXX)
first_fixture=$(ls -d "$src"/tests/fixtures/parity/*/ | head -1)
if ! "$loom" debug-step --model-config "$first_fixture/config.json" --weights "$first_fixture/model.safetensors" \
    --batch "$first_fixture/batch.json" --out "$probe/out.json" --grads "$probe/grads.safetensors" \
    --precision fp32 --backend "$device" > "$probe/log" 2>&1; then
  if grep -q "unsupported\|no CUDA device\|not available\|no such component" "$probe/log"; then
    reason=$(tail -1 "$probe/log"); rm -rf "$probe"
    gpu_unavailable "backend/$device cannot run here: $reason"
  fi
  cat "$probe/log"; rm -rf "$probe"; echo "FAIL: probe debug-step on backend/$device"; exit 1
fi
rm -rf "$probe"
source "$(dirname "$0")/train_fixture.sh"

# 1. Parity with PyTorch through debug-step: BERT's fixtures and ModernBERT's (rotary embeddings,
# windowed attention and GeGLU on the device; fp32 to ModernBERT's own bounds, 1e-5 / 1e-5 / 1e-4).
for fixture in "$src"/tests/fixtures/parity/*/ "$src"/tests/fixtures/parity-modernbert/*/; do
  name=$(basename "$fixture") bounds=(1e-4 1e-4 1e-3)
  [[ "$fixture" == */parity-modernbert/* ]] && name=modernbert-$name bounds=(1e-5 1e-5 1e-4)
  bash "$src/tests/parity/run_parity.sh" "$loom" "$compare" "${fixture%/}" fp32 "$work/parity/$name/fp32" \
    "${bounds[@]}" "$device" > "$work/parity-$name-fp32.log" 2>&1 || { cat "$work/parity-$name-fp32.log"; fail "parity $name fp32"; }
  bash "$src/tests/parity/run_parity.sh" "$loom" "$compare" "${fixture%/}" bf16-mixed "$work/parity/$name/bf16" \
    1.5e-2 5e-2 1e-1 "$device" > "$work/parity-$name-bf16.log" 2>&1 || { cat "$work/parity-$name-bf16.log"; fail "parity $name bf16-mixed"; }
  if [[ "$name" == *-pad ]]; then
    bash "$src/tests/parity/run_unpadded.sh" "$loom" "$compare" "${fixture%/}" "$work/unpadded/$name" 1e-5 1e-5 1e-4 \
      "$device" > "$work/unpadded-$name.log" 2>&1 || { cat "$work/unpadded-$name.log"; fail "unpadded $name"; }
  fi
done

# 2. 50 steps, CPU and device, same seed, dropout on (micro-BERT recipe with bert-tiny's config).
# Runs are named by role (ref: backend/cpu, dev: the backend under test), so BACKEND=cpu works too.
declare -A backend_of=([ref]=cpu [dev]="$device")
for role in ref dev; do
  write_recipe "tiny-$role" 50 1 8
  "$loom" run "$work/tiny-$role.toml" --set backend.component="${backend_of[$role]}" --set model.config="$tiny" \
    > "$work/tiny-$role.log" 2>&1 || { tail -20 "$work/tiny-$role.log"; fail "50 steps on ${backend_of[$role]}"; }
done
same_losses "$work/runs/tiny-ref/metrics.jsonl" "$work/runs/tiny-dev/metrics.jsonl" 1e-4 "50 steps cpu vs $device"

# 3. fp16-mixed overflow on the device: skipped steps and a backed-off scale.
write_recipe overflow 6 1 8
printf '\n[precision]\ncomponent = "fp16-mixed"\ninitial_scale = 1e30\nmax_scale = 1e30\n' >> "$work/overflow.toml"
"$loom" run "$work/overflow.toml" --set backend.component="$device" > "$work/overflow.log" 2>&1 \
  || { tail -20 "$work/overflow.log"; fail "fp16-mixed overflow run"; }
last=$(grep '"type":"train"' "$work/runs/overflow/metrics.jsonl" | tail -1)
skipped=$(sed -E 's/.*"skipped_steps":([0-9]+).*/\1/' <<< "$last")
scale=$(sed -E 's/.*"loss_scale":([^,}]*).*/\1/' <<< "$last")
[ "${skipped:-0}" -ge 1 ] 2>/dev/null || fail "fp16-mixed: no skipped step on overflow ($last)"
awk -v s="$scale" 'BEGIN { exit !(s < 1e30) }' || fail "fp16-mixed: the loss scale did not back off ($scale)"
echo "fp16-mixed overflow on $device: $skipped skipped steps, loss scale now $scale"

# 4. Resume across devices: 20 steps on one, killed while writing the step-20 checkpoint (so the
# last complete one is step 10), continued with --resume auto on the other; against the
# uninterrupted 20 steps on the first (step 2's runs are 50 steps: these are their own).
for roles in "ref dev" "dev ref"; do
  read -r first second <<< "$roles"
  name="resume-$first-$second"
  write_recipe "$name" 20 1 8
  LOOM_FAULT_KILL_IN_CHECKPOINT=step-000020 "$loom" run "$work/$name.toml" \
    --set backend.component="${backend_of[$first]}" > "$work/$name-a.log" 2>&1
  [ "$(cat "$work/runs/$name/checkpoints/latest" 2>/dev/null)" = "step-000010" ] ||
    { tail -20 "$work/$name-a.log"; fail "$name: no step-10 checkpoint after the kill"; continue; }
  "$loom" run "$work/$name.toml" --set backend.component="${backend_of[$second]}" --resume auto \
    > "$work/$name-b.log" 2>&1 || { tail -20 "$work/$name-b.log"; fail "$name: resume"; continue; }
  write_recipe "straight-$first" 20 1 8
  [ -f "$work/runs/straight-$first/metrics.jsonl" ] || "$loom" run "$work/straight-$first.toml" \
    --set backend.component="${backend_of[$first]}" > "$work/straight-$first.log" 2>&1 ||
    fail "uninterrupted run on ${backend_of[$first]}"
  same_losses "$work/runs/straight-$first/metrics.jsonl" "$work/runs/$name/metrics.jsonl" 1e-4 \
    "checkpoint from ${backend_of[$first]} resumed on ${backend_of[$second]}"
done

[ "$failures" -eq 0 ] && echo "GPU training end to end on backend/$device: OK"
exit $((failures > 0))
