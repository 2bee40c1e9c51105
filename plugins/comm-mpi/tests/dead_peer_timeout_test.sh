#!/usr/bin/env bash
# A stalled peer: rank 1 stops calling collectives; rank 0's all-reduce must fail within the
# 2 s timeout, naming rank 1. The job then ends without MPI_Finalize (a broken communicator
# never finalises), so mpirun's own exit status is not the verdict: rank 0's test result is.
# Usage: dead_peer_timeout_test.sh MPIRUN_SH TEST_BINARY
set -u
out=$(LOOM_TEST_TIMEOUT_S=2 timeout 60 bash "$1" 2 -x LOOM_TEST_TIMEOUT_S "$2" \
  --gtest_filter='*Timeout*' --gtest_color=no 2>&1)
echo "$out"
echo "$out" | grep -q "error as reported: .*rank 1 did not respond" || { echo "FAIL: no error naming rank 1"; exit 1; }
echo "$out" | grep -q "\[  FAILED  \]" && { echo "FAIL: a test failed"; exit 1; }
echo "$out" | grep -q "\[  PASSED  \] 1 test" || { echo "FAIL: rank 0 did not pass"; exit 1; }
echo "dead peer timeout: passed"
