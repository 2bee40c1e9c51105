#!/usr/bin/env bash
# Trained work is never lost to a bad ending:
# - a run that diverges (the learning rate of a good run raised to 1e308) writes no checkpoint of
#   its non-finite state and rotation (checkpoint.keep) never deletes the last finite one: the run
#   exits 1 naming the step and the newest checkpoint, `latest` still names it, its MANIFEST
#   verifies and its weights are finite; with few skipped steps and no periodic checkpoint the
#   run still exits 1 (it used to exit 0 with a NaN `latest`); `--resume auto` continues from it;
# - the final checkpoint is written before the final evaluation: an evaluation that fails (its
#   predictions.json cannot be written) costs no weights, and the error names the file and where
#   the weights are. (A dev row longer than the model's positions is refused before training by
#   the recipe check: tests/bad_input/finetune_files.sh.)
# Usage: trained_work_kept_test.sh LOOM SOURCE_DIR
set -uo pipefail
loom=$1
src=$2
glue=$src/tests/fixtures/glue
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# finite DIR: the checkpoint's MANIFEST verifies and every F32 value of its weights and optimizer
# state is finite.
finite() {
  (cd "$1" && sha256sum -c --quiet MANIFEST) || { echo "MANIFEST of $1 does not verify"; return 1; }
  /usr/bin/python3 - "$1" <<'PY'
import json, math, struct, sys
for name in ("model.safetensors", "optimizer.safetensors"):
    data = open(f"{sys.argv[1]}/{name}", "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    for key, t in header.items():
        if key == "__metadata__": continue
        begin, end = t["data_offsets"]
        values = struct.unpack(f"<{(end - begin) // 4}f", data[8 + n + begin:8 + n + end])
        bad = sum(1 for v in values if not math.isfinite(v))
        if bad: sys.exit(f"{name}: {key} has {bad} non-finite values")
PY
}

# --- A run that diverges -------------------------------------------------------------------------
sed -e '/^initial_scale/d' -e 's/^component = "fp16-mixed"/component = "fp32"/' \
    -e 's/^init_from = .*/init_from = ""/' "$src/configs/finetune/glue-mrpc.toml" > "$work/mrpc.toml"
sets=(--set "model.config=$glue/tiny-bert.json" --set "tokenizer.vocab=$glue/vocab.txt"
      --set "data.file=$glue/mrpc/train.tsv" --set "data.max_seq_length=64"
      --set "eval_data.file=$glue/mrpc/dev.tsv" --set "eval_data.max_seq_length=64"
      --set "run.output_dir=$work/runs" --set train.grad_accumulation=1 --set backend.threads=1
      --set train.log_every=1 --set checkpoint.keep=2 --set train.eval_batches=1)
checkpoints=$work/runs/glue-mrpc/checkpoints
"$loom" run "$work/mrpc.toml" "${sets[@]}" --set train.steps=5 --quiet > "$work/good.log" 2>&1 \
  || { cat "$work/good.log"; exit 1; }
[ "$(cat "$checkpoints/latest")" = "step-000005" ] || fail "the good run's latest is $(cat "$checkpoints/latest")"

diverge() { # name steps every: resume the good run with lr 1e308
  "$loom" run "$work/mrpc.toml" "${sets[@]}" --resume auto --set optimizer.lr=1e308 --set train.steps=$2 \
    --set checkpoint.every=$3 --quiet > "$work/$1.log" 2>&1
  local code=$?
  [ $code -eq 1 ] || fail "$1: exit code $code, expected 1: $(cat "$work/$1.log")"
  grep -qE "error: the run diverged: at step [0-9]+ its state is not finite \(weights: [0-9]+ NaN or infinite values" \
    "$work/$1.log" || fail "$1: no divergence error: $(cat "$work/$1.log")"
  grep -qF "The newest checkpoint, $checkpoints/step-000005 (the one checkpoints/latest names)" "$work/$1.log" \
    || fail "$1: the error does not name step-000005: $(cat "$work/$1.log")"
  [ "$(ls "$checkpoints" | tr '\n' ' ')" = "latest step-000005 " ] \
    || fail "$1: checkpoints/ holds $(ls -A "$checkpoints" | tr '\n' ' '), expected only step-000005 and latest"
  [ "$(cat "$checkpoints/latest")" = "step-000005" ] || fail "$1: latest is $(cat "$checkpoints/latest")"
  finite "$checkpoints/step-000005" || fail "$1: step-000005 is not intact and finite"
  grep -q '"nonfinite_state":"weights: ' "$work/runs/glue-mrpc/metrics.jsonl" \
    || fail "$1: metrics.jsonl has no nonfinite_state event"
}
# Checkpoints every 2 steps with keep = 2: each would have rotated step-000005 away.
diverge every-2 15 2
# No periodic checkpoint, few skipped steps (under precision.max_consecutive_skips): only the
# final checkpoint could be written, and the run used to exit 0 with it.
diverge final-only 9 0
# The run continues from the finite checkpoint with a sane learning rate.
"$loom" run "$work/mrpc.toml" "${sets[@]}" --resume auto --set train.steps=7 --quiet > "$work/resumed.log" 2>&1 \
  || fail "resume after divergence: $(cat "$work/resumed.log")"
grep -qF "resumed from $checkpoints/step-000005 at step 5" "$work/resumed.log" \
  || grep -qF "\"resumed_from\":\"$checkpoints/step-000005\"" "$work/runs/glue-mrpc/metrics.jsonl" \
  || fail "resume after divergence did not start from step-000005"
[ "$(cat "$checkpoints/latest")" = "step-000007" ] || fail "resume after divergence: latest is $(cat "$checkpoints/latest")"

# --- The final evaluation fails after training ---------------------------------------------------
# SQuAD: predictions.json cannot be written (a folder stands in its place).
python3 - "$work/squad.json" <<'PY'
import json, sys
context = "the cat sat on the mat . the dog ran in the park ."
qas = [{"id": "q1", "question": "where did the cat sit ?",
        "answers": [{"text": "on the mat", "answer_start": context.index("on the mat")}]},
       {"id": "q2", "question": "where did the dog run ?",
        "answers": [{"text": "in the park", "answer_start": context.index("in the park")}]}]
json.dump({"version": "1.1", "data": [{"title": "t", "paragraphs": [{"context": context, "qas": qas}]}]},
          open(sys.argv[1], "w"))
PY
squad_sets=(--set "model.config=$glue/tiny-bert.json" --set "tokenizer.vocab=$glue/vocab.txt"
            --set "data.file=$work/squad.json" --set "eval_data.file=$work/squad.json"
            --set data.max_seq_length=64 --set data.doc_stride=32 --set data.max_query_length=16 --set data.batch_size=2
            --set eval_data.max_seq_length=64 --set eval_data.doc_stride=32 --set eval_data.max_query_length=16
            --set eval_data.batch_size=2 --set precision.component=fp32 --set "run.output_dir=$work/runs"
            --set run.name=squad --set train.steps=3 --set train.log_every=1 --set checkpoint.every=0
            --set backend.threads=1)
sed -e '/^initial_scale/d' "$src/configs/finetune/squad-v1.1.toml" > "$work/squad.toml"
mkdir -p "$work/runs/squad/predictions.json"
"$loom" run "$work/squad.toml" "${squad_sets[@]}" --quiet > "$work/squad.log" 2>&1
code=$?
[ $code -eq 1 ] || fail "squad: exit code $code, expected 1: $(cat "$work/squad.log")"
grep -qF "error: $work/runs/squad/predictions.json: cannot be written: it is a folder; the trained weights are saved in $work/runs/squad/checkpoints/step-000003" \
  "$work/squad.log" || fail "squad: the error does not name predictions.json and the checkpoint: $(cat "$work/squad.log")"
[ "$(cat "$work/runs/squad/checkpoints/latest" 2> /dev/null)" = "step-000003" ] \
  || fail "squad: no final checkpoint was written"
(cd "$work/runs/squad/checkpoints/step-000003" 2> /dev/null && sha256sum -c --quiet MANIFEST) \
  || fail "squad: the final checkpoint does not verify"

[ $failures -eq 0 ] && echo "trained work kept: diverged runs and failed final evaluations lose no checkpoint"
exit $((failures > 0))
