#!/usr/bin/env bash
# The optimizer step on the backend against the host path (docs/decisions/device-optimizer.md):
# `loom run` on backend/cpu takes the backend path (OptimizerSteps, BackendOptimizer,
# BackendPrecision), and with LOOM_HOST_OPTIMIZER=1 the host path; for NVLAMB under fp16-mixed
# (loss scaling, skipped overflow steps), AdamW under bf16-mixed with two micro-batches and SGD with
# momentum under fp32, both runs must log the same numbers (losses, grad norms, loss scales, skipped
# steps, eval) and write the same bytes in model.safetensors and optimizer.safetensors at steps 10
# and 20. A run resumed from the other path's step-10 checkpoint must end with the same bytes too:
# backend path → host path and host path → backend path.
# Usage: backend_optimizer_test.sh LOOM SOURCE_DIR
set -uo pipefail
loom=$1
src=$2
source "$(dirname "$0")/train_fixture.sh"

# Every train record's numbers but timings (Python's repr of a float round-trips, so equal text
# means equal bits), and every eval record.
records() { # metrics.jsonl type keys...
  /usr/bin/python3 - "$@" <<'PY'
import json, sys
path, kind, keys = sys.argv[1], sys.argv[2], sys.argv[3:]
for line in open(path):
    record = json.loads(line)
    if record.get("type") == kind:
        print(" ".join(repr(record.get(k)) for k in keys))
PY
}
train_numbers() { records "$1" train step loss mlm_loss nsp_loss mlm_accuracy grad_norm loss_scale skipped_steps lr | sort -n; }
eval_numbers() { records "$1" eval step eval_loss eval_mlm_loss eval_mlm_accuracy eval_nsp_accuracy; }

same_checkpoint() { # run-a run-b step what
  for f in model.safetensors optimizer.safetensors; do
    cmp -s "$work/runs/$1/checkpoints/$3/$f" "$work/runs/$2/checkpoints/$3/$f" || fail "$4: $3/$f differs"
  done
}

recipe() { # name optimizer precision accumulation extra-optimizer-lines
  write_recipe "$1" 20 "$4" 8
  sed -i "s/^component = \"nvlamb\"$/component = \"$2\"/; s/^lr = 5e-3$/lr = 5e-3\n$5/" "$work/$1.toml"
  printf '\n[precision]\ncomponent = "%s"\n' "$3" >> "$work/$1.toml"
}

run() { # name [env...]: runs the recipe, the log in $work/name.log
  local name=$1
  shift
  env "$@" "$loom" --log-level info run "$work/$name.toml" --quiet ${resume:+--resume "$resume"} \
    > "$work/$name.log" 2>&1 || { tail -20 "$work/$name.log"; fail "$name: run"; return 1; }
}

for spec in "nvlamb fp16-mixed 1 max_grad_norm = 1.0" "adamw bf16-mixed 2 max_grad_norm = 0.5" \
            "sgd fp32 1 momentum = 0.9"; do
  read -r optimizer precision accumulation extra <<< "$spec"
  device=$optimizer-backend host=$optimizer-host
  recipe "$device" "$optimizer" "$precision" "$accumulation" "$extra"
  recipe "$host" "$optimizer" "$precision" "$accumulation" "$extra"
  resume= run "$device" || continue
  resume= run "$host" LOOM_HOST_OPTIMIZER=1 || continue
  grep -q "optimizer step on the backend (backend/cpu)" "$work/$device.log" \
    || fail "$device: the run did not take the backend path: $(grep -m1 'optimizer step' "$work/$device.log")"
  grep -q "optimizer step on the host: LOOM_HOST_OPTIMIZER is set" "$work/$host.log" \
    || fail "$host: LOOM_HOST_OPTIMIZER=1 did not force the host path"
  numbers=$(train_numbers "$work/runs/$device/metrics.jsonl")
  [ "$(echo "$numbers" | wc -l)" -eq 20 ] || fail "$device: expected 20 train records"
  [ "$numbers" = "$(train_numbers "$work/runs/$host/metrics.jsonl")" ] || {
    fail "$optimizer/$precision: the backend path logged other numbers than the host path"
    diff <(echo "$numbers") <(train_numbers "$work/runs/$host/metrics.jsonl") | head -6
  }
  [ -n "$(eval_numbers "$work/runs/$device/metrics.jsonl")" ] || fail "$device: no eval record"
  [ "$(eval_numbers "$work/runs/$device/metrics.jsonl")" = "$(eval_numbers "$work/runs/$host/metrics.jsonl")" ] \
    || fail "$optimizer/$precision: eval records differ between the paths"
  for step in step-000010 step-000020; do same_checkpoint "$device" "$host" $step "$optimizer/$precision"; done
  if [ "$precision" = fp16-mixed ]; then  # the overflow steps were skipped on the backend path too
    skipped=$(records "$work/runs/$device/metrics.jsonl" train skipped_steps | tail -1)
    [ "$skipped" != 0 ] || echo "note: $device skipped no step (no fp16 overflow this time)"
  fi

  # Resumed across the paths from step 10: the same bytes at step 20.
  recipe "$device-then-host" "$optimizer" "$precision" "$accumulation" "$extra"
  recipe "$host-then-backend" "$optimizer" "$precision" "$accumulation" "$extra"
  resume=$work/runs/$device/checkpoints/step-000010 run "$device-then-host" LOOM_HOST_OPTIMIZER=1 || continue
  resume=$work/runs/$host/checkpoints/step-000010 run "$host-then-backend" || continue
  same_checkpoint "$device" "$device-then-host" step-000020 "$optimizer: backend-path checkpoint resumed on the host path"
  same_checkpoint "$device" "$host-then-backend" step-000020 "$optimizer: host-path checkpoint resumed on the backend path"
  tail_numbers=$(echo "$numbers" | awk '$1 > 10')
  for resumed in "$device-then-host" "$host-then-backend"; do
    [ "$tail_numbers" = "$(train_numbers "$work/runs/$resumed/metrics.jsonl" | awk '$1 > 10')" ] \
      || fail "$resumed: steps 11-20 logged other numbers than the uninterrupted run"
  done
done

[ "$failures" -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "optimizer on the backend against the host path: all checks passed"
