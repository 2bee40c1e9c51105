#!/usr/bin/env bash
# LOOM_REQUIRE_GPU=1 turns a GPU test's skip into a failure (gpu_requirement.hpp/.sh), checked
# where it can be: on a machine without a GPU. Runs COMMAND (a GPU test: a GoogleTest binary with
# a filter, the NCCL test under mpirun, an end-to-end script) twice:
#   without LOOM_REQUIRE_GPU  it must skip: exit 77, or exit 0 with GoogleTest's "[  SKIPPED ]";
#   with LOOM_REQUIRE_GPU=1   it must fail (exit neither 0 nor 77) and say "LOOM_REQUIRE_GPU=1".
# On a machine with a GPU it exits 77 (skipped): there the gpu-labelled tests themselves run, under
# LOOM_REQUIRE_GPU=1 in scripts/gpu-check.
# Usage: require_gpu_test.sh COMMAND [ARGS...]
set -uo pipefail
if { command -v nvidia-smi > /dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU '; } ||
   compgen -G '/dev/nvidia[0-9]*' > /dev/null; then
  echo "SKIP: this machine has an NVIDIA GPU; the test covers machines without one"
  exit 77
fi
log=$(mktemp /tmp/loom-require-gpu-XXXXXX)
trap 'rm -f "$log"' EXIT

env -u LOOM_REQUIRE_GPU "$@" > "$log" 2>&1
status=$?
if ! { [ $status -eq 77 ] || { [ $status -eq 0 ] && grep -q '^\[  SKIPPED \]' "$log"; }; }; then
  tail -30 "$log"
  echo "FAIL: without a GPU and without LOOM_REQUIRE_GPU, '$*' should skip; it exited $status"
  exit 1
fi
echo "without LOOM_REQUIRE_GPU: skipped (exit $status): $(grep -m1 -E 'SKIP|no CUDA device' "$log")"

LOOM_REQUIRE_GPU=1 "$@" > "$log" 2>&1
status=$?
if [ $status -eq 0 ] || [ $status -eq 77 ] || ! grep -q 'LOOM_REQUIRE_GPU=1' "$log"; then
  tail -30 "$log"
  echo "FAIL: with LOOM_REQUIRE_GPU=1 and no GPU, '$*' should fail naming LOOM_REQUIRE_GPU=1; it exited $status"
  exit 1
fi
echo "with LOOM_REQUIRE_GPU=1: failed as it must (exit $status): $(grep -m1 'LOOM_REQUIRE_GPU=1' "$log")"
