#!/usr/bin/env bash
# One parity check: `loom debug-step` on a fixture, then loom_parity_compare on its outputs.
# Usage: run_parity.sh LOOM COMPARE FIXTURE_DIR PRECISION WORK_DIR LOSS_TOL LOGIT_TOL GRAD_TOL [BACKEND]
# (BACKEND: the backend component debug-step runs on, default cpu; tests/e2e/gpu_training_test.sh
# passes cuda.)
# Fails (never skips) when debug-step is missing or fails: parity is a release criterion.
set -uo pipefail
loom=$1 compare=$2 fixture=$3 precision=$4 work=$5 loss_tol=$6 logit_tol=$7 grad_tol=$8 backend=${9:-cpu}
case_name=$(basename "$fixture")
mkdir -p "$work"
rm -f "$work/out.json" "$work/grads.safetensors"

"$loom" debug-step --model-config "$fixture/config.json" --weights "$fixture/model.safetensors" \
  --batch "$fixture/batch.json" --out "$work/out.json" --grads "$work/grads.safetensors" --precision "$precision" \
  --backend "$backend"
status=$?
if [ $status -ne 0 ]; then
  echo "parity $case_name $precision: FAIL: 'loom debug-step' exited with status $status."
  echo "  (If it reports an unknown subcommand, the debug-step verb is not built.)"
  exit 1
fi
for file in out.json grads.safetensors; do
  if [ ! -s "$work/$file" ]; then
    echo "parity $case_name $precision: FAIL: debug-step exited 0 but wrote no $work/$file"
    exit 1
  fi
done
exec "$compare" --fixture "$fixture" --out "$work/out.json" --grads "$work/grads.safetensors" \
  --loss-tol "$loss_tol" --logit-tol "$logit_tol" --grad-tol "$grad_tol" --label "$case_name/$precision"
