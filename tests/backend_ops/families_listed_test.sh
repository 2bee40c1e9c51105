#!/usr/bin/env bash
# CTest runs loom_backend_ops_test one family at a time (backend_ops.<Family>.<backend>), from the
# list in tests/backend_ops/CMakeLists.txt: a suite missing from the list would never run, a listed
# family without a suite would pass with nothing run. Checks both, from the program's own list.
# Usage: families_listed_test.sh PROGRAM FAMILY...
set -euo pipefail
program=$1
shift
suites=$("$program" --gtest_list_tests | sed -n 's|^Backends/\([A-Za-z0-9]*\)\.$|\1|p' | sort -u)
listed=$(printf '%s\n' "$@" | sort -u)
status=0
for suite in $suites; do
  grep -qx "$suite" <<< "$listed" || { echo "FAIL: suite $suite is not in LOOM_BACKEND_OP_FAMILIES"; status=1; }
done
for family in $listed; do
  grep -qx "$family" <<< "$suites" || { echo "FAIL: family $family has no suite in the program"; status=1; }
done
[ $status -eq 0 ] && echo "every suite is a listed family: $(echo $suites)"
exit $status
