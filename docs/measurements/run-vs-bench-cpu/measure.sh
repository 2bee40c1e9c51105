#!/usr/bin/env bash
# measure.sh OUT N LABEL=LOOM...: N rounds; in each, for every LABEL in turn, `loom run` then
# `loom bench` on recipe.toml (60 steps logged every 10; bench 30 timed + 30 untimed steps after 3
# warm-up steps of each kind). Raw outputs under OUT/LABEL/, the load average before each command
# in OUT/LABEL/load.txt (OUT absolute). Both run at nice -15, ahead of the other jobs on the machine.
set -u
out=$1; n=$2; shift 2
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../../.."  # the recipe names the vocabulary and model config relative to the repository root
for i in $(seq 1 "$n"); do
  for pair in "$@"; do
    label=${pair%%=*}; loom=${pair#*=}; dir=$out/$label; mkdir -p "$dir"
    rm -rf /tmp/pf/runs
    echo "run $i load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$dir/load.txt"
    nice -n -15 "$loom" run "$here/recipe.toml" --headless > "$dir/run-$i.log" 2>&1
    cp /tmp/pf/runs/tiny/metrics.jsonl "$dir/run-$i.metrics.jsonl"
    echo "bench $i load $(cut -d' ' -f1-3 /proc/loadavg)" >> "$dir/load.txt"
    nice -n -15 "$loom" bench "$here/recipe.toml" --steps 30 --warmup 3 --json > "$dir/bench-$i.json" 2> "$dir/bench-$i.err"
  done
done
