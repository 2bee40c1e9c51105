#!/usr/bin/env bash
# Runs a libFuzzer target for a fixed time from seed corpora; new inputs go to a corpus in the build
# tree (the seeds in the source tree stay untouched). Fails when the fuzzer finds a crash.
# Usage: run_fuzz.sh FUZZER SECONDS WORK_DIR DICTIONARY SEED_DIR...
set -euo pipefail
fuzzer=$1 seconds=$2 work=$3 dictionary=$4
shift 4
mkdir -p "$work/corpus" "$work/artifacts"
"$fuzzer" -max_total_time="$seconds" -max_len=4096 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  -dict="$dictionary" -artifact_prefix="$work/artifacts/" "$work/corpus" "$@"
