#!/usr/bin/env bash
# Unpadded against padded: `loom debug-step` on a parity fixture's batch of mixed lengths, once
# padded and once with --unpadded (the layers on the real tokens only), then loom_parity_compare with
# the padded run as the expectation: losses, the logits at predicted positions and every gradient
# within the given normwise relative bound. The unpadded run must say it packed the batch, so the
# check cannot pass by running padded twice.
# Usage: run_unpadded.sh LOOM COMPARE FIXTURE_DIR WORK_DIR LOSS_TOL LOGIT_TOL GRAD_TOL [BACKEND]
# (BACKEND: the backend component debug-step runs on, default cpu; tests/e2e/gpu_training_test.sh
# passes cuda.)
set -uo pipefail
loom=$1 compare=$2 fixture=$3 work=$4 loss_tol=$5 logit_tol=$6 grad_tol=$7 backend=${8:-cpu}
case_name=$(basename "$fixture")
mkdir -p "$work/padded" "$work/unpadded"
run() {  # run DIR [FLAGS...]
  local dir=$1
  shift
  "$loom" debug-step --model-config "$fixture/config.json" --weights "$fixture/model.safetensors" \
    --batch "$fixture/batch.json" --out "$dir/out.json" --grads "$dir/grads.safetensors" --backend "$backend" "$@" \
    2> "$dir/stderr.txt"
  local status=$?
  cat "$dir/stderr.txt" >&2
  [ $status -eq 0 ] || { echo "unpadded $case_name: FAIL: 'loom debug-step $*' exited with status $status"; exit 1; }
}
run "$work/padded"
run "$work/unpadded" --unpadded
grep -q "the layers ran on [0-9]* real tokens of" "$work/unpadded/stderr.txt" ||
  { echo "unpadded $case_name: FAIL: the --unpadded run did not pack the batch"; exit 1; }
cp "$work/padded/out.json" "$work/padded/expected.json"
cp "$work/padded/grads.safetensors" "$work/padded/expected_grads.safetensors"
exec "$compare" --fixture "$work/padded" --out "$work/unpadded/out.json" --grads "$work/unpadded/grads.safetensors" \
  --loss-tol "$loss_tol" --logit-tol "$logit_tol" --grad-tol "$grad_tol" --label "$case_name/unpadded"
