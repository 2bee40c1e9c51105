# Skipping a GPU end-to-end test, or failing it: the shell side of gpu_requirement.hpp, sourced by
# every test script that needs a GPU (tests/e2e/gpu_training_test.sh).
#
# gpu_unavailable REASON...: the test found it cannot run on a GPU here. Prints the reason and
#   exits 77 (CTest's SKIP_RETURN_CODE); under LOOM_REQUIRE_GPU=1 (any value but empty or 0: what
#   scripts/gpu-check sets) exits 1 instead, so a GPU machine cannot pass by skipping.
# gpu_required: true under LOOM_REQUIRE_GPU=1.
gpu_required() {
  [ -n "${LOOM_REQUIRE_GPU:-}" ] && [ "${LOOM_REQUIRE_GPU}" != 0 ]
}

gpu_unavailable() {
  if gpu_required; then
    echo "FAIL: LOOM_REQUIRE_GPU=$LOOM_REQUIRE_GPU but no usable GPU: $*"
    exit 1
  fi
  echo "SKIP: no usable GPU: $*"
  exit 77
}
