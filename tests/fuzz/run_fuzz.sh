#!/usr/bin/env bash
# Runs a libFuzzer target for a fixed time from seed corpora; new inputs go to a corpus in the work
# directory (the seeds in the source tree stay untouched). Fails when the fuzzer finds a crash.
# Usage: run_fuzz.sh FUZZER SECONDS WORK_DIR MAX_LEN DICTIONARY|- SEED_DIR...
set -euo pipefail
fuzzer=$1 seconds=$2 work=$3 max_len=$4 dictionary=$5
shift 5
mkdir -p "$work/corpus" "$work/artifacts"
dict=()
if [[ $dictionary != - ]]; then dict=(-dict="$dictionary"); fi
"$fuzzer" -max_total_time="$seconds" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  "${dict[@]}" -artifact_prefix="$work/artifacts/" "$work/corpus" "$@"
