#!/usr/bin/env bash
# Host paths on a backend whose memory the host cannot dereference (docs/decisions/
# device-memory-host-paths.md): backend/cpu-opaque (host/tests/fixtures/opaque_backend_plugin.cpp)
# runs the CPU ops on "device" pointers that fault when the host dereferences them, and offers the
# optimizer passes, so `loom run` ends every step on it (docs/decisions/device-optimizer.md). For
# fp32, bf16-mixed and fp16-mixed, with dropout on, `loom run` on it must match backend/cpu bit for
# bit: every logged loss and grad norm, the eval record, and the bytes of model.safetensors and
# optimizer.safetensors at steps 10 and 20. A run killed while writing its step-20 checkpoint on the
# host path (LOOM_HOST_OPTIMIZER=1: host mirrors, one gradient download and one weight upload per
# step) and resumed with --resume auto on the backend path must end identically; `loom eval` of a
# checkpoint, `loom bench` (training and --inference) and `loom debug-step --backend cpu-opaque` must
# run and agree with backend/cpu. With MPI (WITH_MPI = ON), 2-rank runs on both backends must agree
# too. A steady-state step waits for the backend at most once, and over a run the backend path moves
# no gradient or weight per step (the bytes the fixture counts, against the host path's).
# Usage: device_memory_test.sh LOOM FIXTURE_PLUGIN_DIR SOURCE_DIR WITH_MPI
set -uo pipefail
loom=$1
export LOOM_PLUGIN_PATH=$2
src=$3
with_mpi=$(echo "${4:-OFF}" | tr a-z A-Z)
source "$(dirname "$0")/train_fixture.sh"

# Every train record's step, losses, accuracy and grad norm (timings differ between runs), and
# every eval record; Python's repr of a float round-trips, so equal text means equal bits.
records() { # metrics.jsonl type keys...
  /usr/bin/python3 - "$@" <<'PY'
import json, sys
path, kind, keys = sys.argv[1], sys.argv[2], sys.argv[3:]
for line in open(path):
    record = json.loads(line)
    if record.get("type") == kind:
        print(" ".join(repr(record.get(k)) for k in keys))
PY
}
train_numbers() { records "$1" train step loss mlm_loss nsp_loss mlm_accuracy grad_norm loss_scale skipped_steps lr | sort -n; }
eval_numbers() { records "$1" eval step eval_loss eval_mlm_loss eval_mlm_accuracy eval_nsp_accuracy eval_examples; }

device_recipe() { # name backend precision
  write_recipe "$1" 20 1 8
  sed -i "s/^component = \"cpu\"$/component = \"$2\"/" "$work/$1.toml"
  printf '\n[precision]\ncomponent = "%s"\n' "$3" >> "$work/$1.toml"
}

same_checkpoints() { # run-a run-b what
  for step in step-000010 step-000020; do
    for f in model.safetensors optimizer.safetensors; do
      cmp -s "$work/runs/$1/checkpoints/$step/$f" "$work/runs/$2/checkpoints/$step/$f" || fail "$3: $step/$f differs"
    done
  done
}

for precision in fp32 bf16-mixed fp16-mixed; do
  cpu=cpu-$precision opaque=opaque-$precision killed=killed-$precision
  device_recipe "$cpu" cpu "$precision"
  device_recipe "$opaque" cpu-opaque "$precision"
  device_recipe "$killed" cpu-opaque "$precision"
  grep -q '^component = "cpu-opaque"$' "$work/$opaque.toml" || fail "the recipe does not select backend/cpu-opaque"

  # 1. The same 20 steps on both backends: identical numbers and checkpoint bytes.
  "$loom" run "$work/$cpu.toml" --quiet > "$work/$cpu.log" 2>&1 || { cat "$work/$cpu.log"; fail "$cpu: run"; continue; }
  "$loom" --log-level info run "$work/$opaque.toml" --quiet > "$work/$opaque.log" 2>&1 || { cat "$work/$opaque.log"; fail "$opaque: run"; continue; }
  grep -q "optimizer step on the backend (backend/cpu-opaque)" "$work/$opaque.log" \
    || fail "$opaque: the trainer did not end its steps on the backend"
  [ "$(train_numbers "$work/runs/$cpu/metrics.jsonl" | wc -l)" -eq 20 ] || fail "$cpu: expected 20 train records"
  if [ "$(train_numbers "$work/runs/$cpu/metrics.jsonl")" != "$(train_numbers "$work/runs/$opaque/metrics.jsonl")" ]; then
    fail "$precision: backend/cpu-opaque's losses differ from backend/cpu's"
    diff <(train_numbers "$work/runs/$cpu/metrics.jsonl") <(train_numbers "$work/runs/$opaque/metrics.jsonl") | head
  fi
  [ -n "$(eval_numbers "$work/runs/$opaque/metrics.jsonl")" ] || fail "$opaque: no eval record"
  [ "$(eval_numbers "$work/runs/$cpu/metrics.jsonl")" = "$(eval_numbers "$work/runs/$opaque/metrics.jsonl")" ] \
    || fail "$precision: eval records differ"
  same_checkpoints "$cpu" "$opaque" "$precision cpu vs cpu-opaque"

  # 2. On the host path (host mirrors), killed while writing the step-20 checkpoint, resumed from
  #    step 10 on the backend path: the same end.
  LOOM_HOST_OPTIMIZER=1 LOOM_FAULT_KILL_IN_CHECKPOINT=step-000020 "$loom" --log-level info run "$work/$killed.toml" \
    --quiet > "$work/$killed.log" 2>&1
  code=$?
  [ $code -eq 137 ] || { cat "$work/$killed.log"; fail "$killed: exited $code, expected 137 (SIGKILL)"; }
  grep -q "not host-addressable" "$work/$killed.log" || fail "$killed: LOOM_HOST_OPTIMIZER=1 did not take the host path"
  "$loom" --log-level info run "$work/$killed.toml" --resume auto --quiet > "$work/$killed-resumed.log" 2>&1 \
    || { cat "$work/$killed-resumed.log"; fail "$killed: resume"; continue; }
  grep -q "optimizer step on the backend" "$work/$killed-resumed.log" || fail "$killed: the resumed run took the host path"
  grep -Eq 'resumed.from.*step-000010' "$work/$killed-resumed.log" "$work/runs/$killed/metrics.jsonl" \
    || fail "$killed: did not resume from step 10"
  [ "$(train_numbers "$work/runs/$cpu/metrics.jsonl")" = "$(train_numbers "$work/runs/$killed/metrics.jsonl")" ] \
    || fail "$precision: the resumed backend/cpu-opaque run's losses differ"
  same_checkpoints "$cpu" "$killed" "$precision resumed cpu-opaque"

  # 3. `loom eval` of the final checkpoint through both backends.
  final=$work/runs/$opaque/checkpoints/step-000020
  "$loom" eval "$work/$opaque.toml" --checkpoint "$final" --batches 2 > "$work/$opaque-eval.json" 2> "$work/$opaque-eval.log" \
    || { cat "$work/$opaque-eval.log"; fail "$opaque: eval"; }
  "$loom" eval "$work/$cpu.toml" --checkpoint "$final" --batches 2 > "$work/$cpu-eval.json" 2> "$work/$cpu-eval.log" \
    || { cat "$work/$cpu-eval.log"; fail "$cpu: eval"; }
  grep -q '"eval_mlm_loss"' "$work/$opaque-eval.json" || fail "$opaque: eval printed no eval_mlm_loss: $(cat "$work/$opaque-eval.json")"
  cmp -s "$work/$opaque-eval.json" "$work/$cpu-eval.json" || fail "$precision: loom eval differs between backends"
done

# 4. `loom bench` on the device backend (throughput differs; it must run and report).
"$loom" bench "$work/opaque-fp32.toml" --steps 3 --warmup 1 --json > "$work/bench.json" 2> "$work/bench.log" \
  || { cat "$work/bench.log"; fail "bench on backend/cpu-opaque"; }
grep -q '"train_sequences_per_second"' "$work/bench.json" || fail "bench printed no throughput"
# The inference bench reads the head's outputs back from device memory (fp32 and bf16 models).
"$loom" bench "$work/opaque-fp32.toml" --inference --batch-sizes 2 --seq-lengths 16 --steps 2 --warmup 1 --json \
  > "$work/inference.json" 2> "$work/inference.log" || { cat "$work/inference.log"; fail "bench --inference on backend/cpu-opaque"; }
[ "$(grep -c '"sequences_per_second"' "$work/inference.json")" -eq 2 ] || fail "bench --inference printed no fp32 and bf16 rows"

# 5. `loom debug-step` (weights in, gradients out) on both backends: identical outputs.
parity=$src/tests/fixtures/parity/h36-heads3-erf-pad
for precision in fp32 bf16-mixed; do
  for backend in cpu cpu-opaque; do
    "$loom" debug-step --model-config "$parity/config.json" --weights "$parity/model.safetensors" \
      --batch "$parity/batch.json" --precision "$precision" --backend "$backend" \
      --out "$work/debug-$backend-$precision.json" --grads "$work/grads-$backend-$precision.safetensors" \
      > "$work/debug-$backend.log" 2>&1 || { cat "$work/debug-$backend.log"; fail "debug-step --backend $backend"; }
  done
  cmp -s "$work/debug-cpu-$precision.json" "$work/debug-cpu-opaque-$precision.json" \
    || fail "debug-step $precision: outputs differ between backends"
  cmp -s "$work/grads-cpu-$precision.safetensors" "$work/grads-cpu-opaque-$precision.safetensors" \
    || fail "debug-step $precision: gradients differ between backends"
done

# 6. Fine-tuning heads (pooler + classifier, span head) from a checkpoint via init_from, dropout
#    on: the same numbers and weights on both backends, and `loom eval` of the result.
task_recipe() { # name backend head data-lines
  cat > "$work/$1.toml" <<TOML
[run]
name = "$1"
seed = 5
output_dir = "$work/runs"

[backend]
component = "$2"
threads = 1

[tokenizer]
component = "wordpiece"
vocab = "$vocab"

[data]
$4
batch_size = 4

[model]
config = "$fixtures/micro-bert.json"
blocks = ["bert.embeddings", { block = "bert.encoder-layer", repeat = "num_hidden_layers" }, "$3"]
init_from = "$work/runs/opaque-fp32/checkpoints/step-000020"

[optimizer]
component = "adamw"
lr = 1e-3

[schedule]
component = "constant"

[train]
steps = 4
log_every = 1
TOML
}
classification='component = "text-classification"
file = "'"$src"'/data/tasks/spam/train-200.tsv"
max_seq_length = 64'
squad='component = "squad"
file = "'"$src"'/plugins/datasets/tests/data/squad_v1.1.json"
max_seq_length = 64
doc_stride = 32
max_query_length = 24'
for task in classification squad; do
  head=bert.classifier-head data=$classification
  [ $task = squad ] && head=bert.span-head data=$squad
  for backend in cpu cpu-opaque; do
    task_recipe "$task-$backend" "$backend" "$head" "$data"
    "$loom" run "$work/$task-$backend.toml" --quiet > "$work/$task-$backend.log" 2>&1 \
      || { cat "$work/$task-$backend.log"; fail "$task on backend/$backend"; }
  done
  [ "$(train_numbers "$work/runs/$task-cpu/metrics.jsonl" | wc -l)" -eq 4 ] || fail "$task-cpu: expected 4 train records"
  [ "$(train_numbers "$work/runs/$task-cpu/metrics.jsonl")" = "$(train_numbers "$work/runs/$task-cpu-opaque/metrics.jsonl")" ] \
    || fail "$task: backend/cpu-opaque's losses differ from backend/cpu's"
  cmp -s "$work/runs/$task-cpu/checkpoints/step-000004/model.safetensors" \
    "$work/runs/$task-cpu-opaque/checkpoints/step-000004/model.safetensors" || fail "$task: final weights differ"
done
"$loom" eval "$work/classification-cpu-opaque.toml" --checkpoint "$work/runs/classification-cpu-opaque/checkpoints/step-000004" \
  --batches 3 > "$work/classification-eval.json" 2> "$work/classification-eval.log" \
  || { cat "$work/classification-eval.log"; fail "loom eval (classification) on backend/cpu-opaque"; }
grep -q '"eval_accuracy"' "$work/classification-eval.json" || fail "classification eval printed no accuracy"

# 7. Two ranks under mpirun: the start-of-run broadcast goes through the master copy, and the
#    overlapped all-reduce a device backend cannot do falls back to post-accumulation on the host
#    copy. It must match backend/cpu with post-accumulation all-reduce bit for bit.
if [[ "$with_mpi" =~ ^(ON|TRUE|YES|1)$ ]] && command -v mpirun > /dev/null; then
  for backend in cpu cpu-opaque; do
    device_recipe "dp-$backend" "$backend" fp32
    printf '\n[communicator]\ncomponent = "mpi"\ntimeout_s = 60.0\n' >> "$work/dp-$backend.toml"
  done
  sed -i 's/^\[train\]$/[train]\nallreduce_post_accumulation = true/' "$work/dp-cpu.toml"
  for backend in cpu cpu-opaque; do
    bash "$src/tests/e2e/mpirun.sh" 2 "$loom" --log-level info run "$work/dp-$backend.toml" --quiet \
      > "$work/dp-$backend.log" 2>&1 || { tail -20 "$work/dp-$backend.log"; fail "2 ranks on backend/$backend"; }
  done
  [ "$(train_numbers "$work/runs/dp-cpu/metrics.jsonl" | wc -l)" -eq 20 ] || fail "dp-cpu: expected 20 train records"
  grep -q "all-reduced once after accumulation" "$work/dp-cpu-opaque.log" \
    || fail "2 ranks on backend/cpu-opaque: no log line about the post-accumulation fallback"
  [ "$(train_numbers "$work/runs/dp-cpu/metrics.jsonl")" = "$(train_numbers "$work/runs/dp-cpu-opaque/metrics.jsonl")" ] \
    || fail "2 ranks: backend/cpu-opaque's losses differ from backend/cpu's"
  same_checkpoints dp-cpu dp-cpu-opaque "2 ranks cpu vs cpu-opaque"
else
  echo "note: no MPI; the 2-rank check was not run"
fi

# 8. Times a steady-state step makes the host wait for the backend (copies to the host and
#    synchronisations, counted by backend/cpu-opaque's TransferCounter): at most one per optimizer
#    step, with two micro-batches, on every record's non-log steps (docs/gpu.md).
device_recipe syncs cpu-opaque bf16-mixed
sed -i 's/^log_every = 1$/log_every = 5/; s/^grad_accumulation = 1$/grad_accumulation = 2/' "$work/syncs.toml"
"$loom" run "$work/syncs.toml" --quiet > "$work/syncs.log" 2>&1 || { cat "$work/syncs.log"; fail "syncs: run"; }
syncs=$(records "$work/runs/syncs/metrics.jsonl" train syncs_per_step | tr '\n' ' ')
echo "host waits per steady-state step, per log window: $syncs"
[ "$(echo $syncs | wc -w)" -eq 4 ] || fail "syncs: expected 4 train records with syncs_per_step, got '$syncs'"
for n in $syncs; do [ "$n" = "1" ] || [ "$n" = "0" ] || fail "syncs: a steady-state step waited $n times (at most 1)"; done
# `loom bench` counts the same in its loop of whole steps (train_step(), as `loom run` calls it).
"$loom" bench "$work/syncs.toml" --steps 3 --warmup 1 --json > "$work/syncs-bench.json" 2> "$work/syncs-bench.log" \
  || { cat "$work/syncs-bench.log"; fail "syncs: bench"; }
bench_syncs=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["syncs_per_step"])' "$work/syncs-bench.json") \
  || fail "syncs: bench printed no syncs_per_step: $(cat "$work/syncs-bench.json")"
echo "loom bench: at most $bench_syncs host waits per step"
[ "$bench_syncs" -le 1 ] || fail "syncs: loom bench counted $bench_syncs host waits in a step (at most 1)"

# 9. What crosses during a run (the bytes backend/cpu-opaque moved each way, LOOM_OPAQUE_TRANSFER_LOG):
#    the host path downloads the gradients and uploads the weights every step; the backend path
#    does neither. Over 20 bf16-mixed NVLAMB steps (none skipped) with checkpoints at 10 and 20 the
#    host path therefore downloads 20 flat buffers more, plus the weights it reads once before the
#    first step (its optimizer's host view; one process on the backend path never reads them), less
#    the 2 × 2 optimizer state tensors the backend path copies for its checkpoints, and uploads 20
#    more, less the 2 state tensors the backend path uploads when the optimizer attaches: 17 and 18
#    (flags and norms are bytes).
for path in backend host; do
  device_recipe "bytes-$path" cpu-opaque bf16-mixed
  forced=
  [ $path = host ] && forced=1
  LOOM_HOST_OPTIMIZER=$forced LOOM_OPAQUE_TRANSFER_LOG="$work/bytes-$path.txt" "$loom" run "$work/bytes-$path.toml" \
    --quiet > "$work/bytes-$path.log" 2>&1 || { cat "$work/bytes-$path.log"; fail "bytes-$path: run"; }
done
/usr/bin/python3 - "$work" > "$work/bytes.txt" <<'PY' || fail "the backend path moved other bytes than expected (above)"
import json, struct, sys
work = sys.argv[1]
def moved(path):  # the counts of the run's one backend
    words = open(f"{work}/bytes-{path}.txt").read().split()
    return {words[i]: int(words[i + 1]) for i in range(0, len(words), 2)}
with open(f"{work}/runs/bytes-backend/checkpoints/step-000020/optimizer.safetensors", "rb") as f:
    header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
start, end = header["exp_avg"]["data_offsets"]
buffer = end - start  # one flat f32 buffer: the gradients' and the master weights' size
backend, host = moved("backend"), moved("host")
print(f"flat buffer {buffer} bytes; backend path {backend}; host path {host}")
ok = True
for way, expected in (("device_to_host_bytes", 17), ("host_to_device_bytes", 18)):
    buffers = (host[way] - backend[way]) / buffer
    print(f"{way}: the backend path moved {buffers:.4f} flat buffers fewer (expected {expected})")
    ok = ok and round(buffers) == expected
sys.exit(0 if ok else 1)
PY
cat "$work/bytes.txt"

[ $failures -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "device memory host paths: all checks passed"
