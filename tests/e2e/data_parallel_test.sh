#!/usr/bin/env bash
# Data-parallel training in real processes (mpirun on loopback, communicator/mpi):
#  1. 2 ranks × batch 8 = 1 process × batch 8 × accumulation 2 (losses and weights after 20 steps,
#     relative difference ≤ 1e-5), with overlapped buckets and with post-accumulation all-reduce;
#  2. a 2-rank checkpoint resumed on 1 rank and a 1-rank one on 2 ranks give the same losses;
#  3. 3 ranks over uneven shards read every instance exactly once per epoch (with ranks left
#     without rows in the epoch's last global batch);
#  4. a rank killed with SIGKILL / stopped with SIGSTOP: the job fails naming it within the
#     timeout, and --resume auto continues from the last complete checkpoint.
# Usage: data_parallel_test.sh LOOM COMPARE_WEIGHTS SOURCE_DIR
set -uo pipefail
loom=$1
compare=$2
src=$3
mpirun_sh="$src/tests/e2e/mpirun.sh"
work=$(mktemp -d /tmp/loom-dp-test-XXXXXX)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
fixtures="$src/tests/fixtures/train"

source "$src/tests/e2e/sotu_shards.sh"
fetch_real_text || exit 1
make_sotu_shards "$work/shards" 6 3 || exit 1

write_recipe() { # name communicator batch accumulation steps extra-train-lines...
  local name=$1 comm=$2 batch=$3 accumulation=$4 steps=$5
  shift 5
  cat > "$work/$name.toml" <<TOML
[run]
name = "$name"
seed = 3
output_dir = "$work/runs"

[backend]
component = "cpu"
threads = 1

[communicator]
component = "$comm"
$([ "$comm" = mpi ] && echo "timeout_s = 20.0")

[data]
component = "pretraining-shards"
files = "$work/shards/*training*.hdf5"
batch_size = $batch

[model]
config = "$fixtures/micro-bert.json"
blocks = ["bert.embeddings", { block = "bert.encoder-layer", repeat = "num_hidden_layers" }, "bert.pretraining-heads"]

[optimizer]
component = "nvlamb"
lr = 5e-3

[schedule]
component = "poly-warmup"
warmup = 0.1

[train]
steps = $steps
grad_accumulation = $accumulation
log_every = 1
$(printf '%s\n' "$@")

[checkpoint]
every = 10
keep = 5
TOML
}

losses() { /usr/bin/python3 -c '
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("type") == "train": print(r["step"], repr(r["loss"]))' "$1"; }

# Largest relative loss difference over the steps both files have (prints it; fails above 1e-5).
same_losses() { /usr/bin/python3 - "$1" "$2" <<'PY'
import json, sys
def read(path):
    return {r["step"]: r["loss"] for r in map(json.loads, open(path)) if r.get("type") == "train"}
a, b = read(sys.argv[1]), read(sys.argv[2])
common = sorted(set(a) & set(b))
if not common: print("no common steps"); sys.exit(1)
worst = max(abs(a[s] - b[s]) / abs(a[s]) for s in common)
print(f"{len(common)} steps, max relative loss difference {worst:.3g}")
sys.exit(0 if worst <= 1e-5 else 1)
PY
}

run_ranks() { # ranks recipe log extra-args...
  local ranks=$1 recipe=$2 log=$3
  shift 3
  if [ "$ranks" = 1 ]; then "$loom" run "$recipe" --headless "$@" > "$log" 2>&1
  else timeout 300 bash "$mpirun_sh" "$ranks" "$loom" run "$recipe" --headless "$@" > "$log" 2>&1; fi
}

# 1. Equivalence.
write_recipe single local 8 2 20
run_ranks 1 "$work/single.toml" "$work/single.log" || { cat "$work/single.log"; fail "single-process run"; }
for mode in overlap post; do
  extra="allreduce_bucket_mb = 0.25"
  [ $mode = post ] && extra="allreduce_post_accumulation = true"
  write_recipe "dp-$mode" mpi 8 1 20 "$extra"
  run_ranks 2 "$work/dp-$mode.toml" "$work/dp-$mode.log" || { tail -20 "$work/dp-$mode.log"; fail "2-rank run ($mode)"; continue; }
  echo "2 ranks ($mode) vs 1 process × accumulation 2:"
  same_losses "$work/runs/single/metrics.jsonl" "$work/runs/dp-$mode/metrics.jsonl" || fail "$mode: losses differ"
  "$compare" "$work/runs/single/checkpoints/step-000020/model.safetensors" \
    "$work/runs/dp-$mode/checkpoints/step-000020/model.safetensors" --rtol 1e-5 || fail "$mode: weights differ"
  [ "$(grep -c '"type":"train"' "$work/runs/dp-$mode/metrics.jsonl")" = 20 ] || fail "$mode: not one record per step"
  /usr/bin/python3 -c '
import json, sys
r = [json.loads(l) for l in open(sys.argv[1]) if "\"train\"" in l][-1]
assert r["world_size"] == 2 and [x["rank"] for x in r["ranks"]] == [0, 1], r
assert all(x["step_ms"] > 0 and x["sequences_per_second"] > 0 for x in r["ranks"]), r
print("per-rank step_ms:", [round(x["step_ms"], 1) for x in r["ranks"]], "allreduce_ms:", round(r["allreduce_ms"], 2))' \
    "$work/runs/dp-$mode/metrics.jsonl" || fail "$mode: metrics lack both ranks' step times"
  grep -q "step=20/20 loss=" "$work/dp-$mode.log" || fail "$mode: no headless line: $(tail -3 "$work/dp-$mode.log")"
done
[ -n "$(ls "$work/runs/dp-overlap" | grep -v -e checkpoints -e metrics.jsonl -e recipe.resolved.toml)" ] \
  && fail "unexpected files in the run directory: $(ls "$work/runs/dp-overlap")"

# 2. Resume across world sizes: 2-rank step 10 on 1 rank (accumulation 2) and the reverse.
write_recipe two-to-one local 8 2 20
run_ranks 1 "$work/two-to-one.toml" "$work/two-to-one.log" --resume "$work/runs/dp-overlap/checkpoints/step-000010" \
  || { cat "$work/two-to-one.log"; fail "resume a 2-rank checkpoint on 1 rank"; }
write_recipe one-to-two mpi 8 1 20
run_ranks 2 "$work/one-to-two.toml" "$work/one-to-two.log" --resume "$work/runs/single/checkpoints/step-000010" \
  || { tail -20 "$work/one-to-two.log"; fail "resume a 1-rank checkpoint on 2 ranks"; }
for run in two-to-one one-to-two; do
  echo "$run resumed at step 10 vs uninterrupted:"
  [ "$(losses "$work/runs/$run/metrics.jsonl" | awk 'NR == 1 { print $1 }')" = 11 ] || fail "$run did not continue at step 11"
  same_losses "$work/runs/single/metrics.jsonl" "$work/runs/$run/metrics.jsonl" || fail "$run: losses differ"
  "$compare" "$work/runs/single/checkpoints/step-000020/model.safetensors" \
    "$work/runs/$run/checkpoints/step-000020/model.safetensors" --rtol 1e-5 || fail "$run: weights differ"
done

# 3. Uneven shards over 3 ranks: every instance exactly once per epoch.
total=$(jq '[.shards[] | select(.split == "training") | .instances] | add' "$work/shards/manifest.json")
sizes=$(jq -r '[.shards[] | select(.split == "training") | .instances] | map(tostring) | join(" + ")' "$work/shards/manifest.json")
# Batch 11: global batches of 33 leave 234 mod 33 = 3 instances for the last one of the epoch, so
# rank 0 gets 3 rows and ranks 1 and 2 none (they still join the step's collectives).
steps=$(( (total + 32) / 33 + 2 ))  # one epoch, into the next
echo "uneven shards: $sizes instances ($total), 3 ranks × batch 11 (last global batch: $((total % 33)) rows), $steps steps"
write_recipe uneven mpi 11 1 $steps
mkdir -p "$work/trace"
LOOM_TRACE_INSTANCES="$work/trace" run_ranks 3 "$work/uneven.toml" "$work/uneven.log" \
  || { tail -20 "$work/uneven.log"; fail "3-rank run"; }
cat "$work/trace"/rank-*.txt | awk -v total="$total" '
  $1 == 0 { seen[$2]++ }
  END {
    for (id = 0; id < total; id++) if (seen[id] != 1) { if (bad++ < 5) printf "instance %d read %d times in epoch 0\n", id, seen[id] }
    exit bad > 0 }' || fail "epoch 0 did not read every instance exactly once"
for r in 0 1 2; do [ -s "$work/trace/rank-$r.txt" ] || fail "rank $r read nothing"; done

# 4a. SIGKILL one rank mid-run: the job ends non-zero naming rank 1; --resume auto continues.
write_recipe killed mpi 8 1 100000 ""
sed -i 's/timeout_s = 20.0/timeout_s = 5.0/; s/every = 10/every = 5/' "$work/killed.toml"
bash "$mpirun_sh" 2 "$loom" run "$work/killed.toml" --headless > "$work/killed.log" 2>&1 &
job=$!
for _ in $(seq 1 600); do [ -s "$work/runs/killed/checkpoints/latest" ] && break; sleep 0.1; done
victim=""
for pid in $(pgrep -P $job -f "loom run" ; pgrep -f "loom run $work/killed.toml"); do
  tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=1" && victim=$pid && break
done
if [ -z "$victim" ]; then fail "could not find rank 1's process"; kill $job; else
  killed_at=$(date +%s%N)
  kill -KILL "$victim"
  wait $job; code=$?
  elapsed=$(( ($(date +%s%N) - killed_at) / 1000000 ))
  echo "SIGKILL of rank 1: job exited $code after ${elapsed} ms"
  [ $code -ne 0 ] || fail "the job exited 0 after a rank was killed"
  grep -qi "rank 1" "$work/killed.log" || fail "no message names rank 1: $(tail -5 "$work/killed.log")"
  [ "$elapsed" -lt 30000 ] || fail "the job took ${elapsed} ms to end after the kill"
  grep -i "rank 1" "$work/killed.log" | head -2
  latest=$(cat "$work/runs/killed/checkpoints/latest")
  run_ranks 2 "$work/killed.toml" "$work/resumed.log" --resume auto --set train.steps=$((10#${latest#step-} + 3)) \
    || { tail -20 "$work/resumed.log"; fail "--resume auto after the kill"; }
  first=$(grep -o "step=[0-9]*/" "$work/resumed.log" | head -1)
  [ "$first" = "step=$((10#${latest#step-} + 1))/" ] || fail "did not continue after $latest: $(head -5 "$work/resumed.log")"
fi

# 4b. SIGSTOP one rank: MPI cannot see it; the communicator's timeout must name it.
write_recipe stalled mpi 8 1 100000 ""
sed -i 's/timeout_s = 20.0/timeout_s = 3.0/' "$work/stalled.toml"
bash "$mpirun_sh" 2 "$loom" run "$work/stalled.toml" --headless > "$work/stalled.log" 2>&1 &
job=$!
for _ in $(seq 1 600); do [ -s "$work/runs/stalled/metrics.jsonl" ] && break; sleep 0.1; done
victim=""
for pid in $(pgrep -f "loom run $work/stalled.toml"); do
  tr '\0' '\n' < "/proc/$pid/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=1" && victim=$pid && break
done
if [ -z "$victim" ]; then fail "could not find rank 1's process"; kill $job; else
  stopped_at=$(date +%s%N)
  kill -STOP "$victim"
  wait $job; code=$?
  elapsed=$(( ($(date +%s%N) - stopped_at) / 1000000 ))
  kill -KILL "$victim" 2>/dev/null
  echo "SIGSTOP of rank 1: job exited $code after ${elapsed} ms"
  [ $code -ne 0 ] || fail "the job exited 0 with a stalled rank"
  grep -q "rank 1 did not respond" "$work/stalled.log" || fail "no timeout message naming rank 1: $(tail -5 "$work/stalled.log")"
  grep "did not respond" "$work/stalled.log" | head -1
  [ "$elapsed" -lt 30000 ] || fail "the stalled job took ${elapsed} ms to fail"
fi

if [ $failures -ne 0 ]; then echo "$failures failed"; exit 1; fi
echo "data parallel end-to-end: all passed"
