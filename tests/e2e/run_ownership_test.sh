#!/usr/bin/env bash
# One run owns runs/<name>: two simultaneous starts → exactly one trains, the other exits
# 2 naming the owner's pid; `--resume auto` on a live run is refused the same way; the lock of a
# SIGKILLed run never blocks the next one, which continues metrics.jsonl without the records the
# killed attempt wrote past its last checkpoint; a checkpoint a killed run left half-written is
# removed (and logged) before training.
# Usage: run_ownership_test.sh LOOM SOURCE_DIR
set -uo pipefail
loom=$1
src=$2
source "$(dirname "$0")/train_fixture.sh"
host=$(hostname)

steps_of() { losses "$1" | cut -d' ' -f1 | tr '\n' ' '; }  # the train steps in metrics.jsonl, in order
expect_steps() { # metrics.jsonl last-step what: every step 1..last exactly once
  local want
  want=$(seq 1 "$2" | tr '\n' ' ')
  [ "$(steps_of "$1")" = "$want" ] || fail "$3: metrics.jsonl train steps are '$(steps_of "$1")', expected 1..$2 once each"
}
refusal() { # log pid what: the exit-2 message names the run directory and the owner
  grep -q "error: $work/runs/$4 is in use by loom run (pid $2, host $host, since 20[0-9-]*T[0-9:]*Z); wait for it or choose another run.name" "$1" \
    || fail "$3: no refusal naming pid $2: $(cat "$1")"
}

# 1. Two `loom run`s of one recipe started together: one trains every step, the other exits 2.
write_recipe shared 60 1 8
"$loom" run "$work/shared.toml" --quiet > "$work/shared-a.log" 2>&1 &
pid_a=$!
"$loom" run "$work/shared.toml" --quiet > "$work/shared-b.log" 2>&1 &
pid_b=$!
wait $pid_a; code_a=$?
wait $pid_b; code_b=$?
if [ $code_a -eq 0 ] && [ $code_b -eq 2 ]; then
  refusal "$work/shared-b.log" $pid_a "simultaneous start" shared
elif [ $code_a -eq 2 ] && [ $code_b -eq 0 ]; then
  refusal "$work/shared-a.log" $pid_b "simultaneous start" shared
else
  fail "simultaneous start: exit codes $code_a and $code_b, expected one 0 and one 2"
  cat "$work/shared-a.log" "$work/shared-b.log"
fi
expect_steps "$work/runs/shared/metrics.jsonl" 60 "simultaneous start"
[ "$(cat "$work/runs/shared/checkpoints/latest")" = "step-000060" ] || fail "simultaneous start: no final checkpoint"

# 2. A live run refuses `--resume auto` and a fresh start; after kill -9 its lock is gone, and the
#    resumed run drops the records the killed one wrote past its last checkpoint.
write_recipe live 100000 1 8
"$loom" run "$work/live.toml" --quiet > "$work/live.log" 2>&1 &
pid_live=$!
for _ in $(seq 1 600); do
  [ -s "$work/runs/live/checkpoints/latest" ] && [ "$(grep -c '"type":"train"' "$work/runs/live/metrics.jsonl")" -ge 13 ] && break
  sleep 0.1
done
"$loom" run "$work/live.toml" --resume auto --quiet > "$work/live-resume.log" 2>&1
code=$?
[ $code -eq 2 ] || fail "--resume auto on a live run exited $code, expected 2"
refusal "$work/live-resume.log" $pid_live "--resume auto on a live run" live
"$loom" run "$work/live.toml" --quiet > "$work/live-fresh.log" 2>&1
code=$?
[ $code -eq 2 ] || fail "a second fresh start on a live run exited $code, expected 2"
refusal "$work/live-fresh.log" $pid_live "fresh start on a live run" live
kill -KILL $pid_live
wait $pid_live 2> /dev/null
latest=$(sed 's/step-0*//' "$work/runs/live/checkpoints/latest")
recorded=$(steps_of "$work/runs/live/metrics.jsonl" | awk '{print $NF}')
grep -q "\"pid\":$pid_live," "$work/runs/live/.lock" || fail "the lock file does not name the killed run: $(cat "$work/runs/live/.lock")"
last=$((latest + 3))
"$loom" run "$work/live.toml" --resume auto --set train.steps=$last --quiet > "$work/live-after-kill.log" 2>&1
code=$?
[ $code -eq 0 ] || fail "a run after kill -9 exited $code, expected 0 (stale lock blocked?): $(cat "$work/live-after-kill.log")"
# (The kill may land just after a checkpoint, before the next record: then nothing is dropped.)
if [ "$recorded" -gt "$latest" ]; then
  grep -qE "dropped [0-9]+ records after step $latest " "$work/live-after-kill.log" \
    || fail "the records of steps $((latest + 1))..$recorded are not reported dropped: $(cat "$work/live-after-kill.log")"
fi
expect_steps "$work/runs/live/metrics.jsonl" $last "resume after kill -9"
grep -q "\"resumed_from\":\"$work/runs/live/checkpoints/step-0*$latest\"" "$work/runs/live/metrics.jsonl" \
  || fail "metrics.jsonl has no resume event"

# 3. A run killed while writing its step-20 checkpoint leaves .partial-step-000020; the next run
#    removes it and says so before it trains.
write_recipe partial 30 1 8
LOOM_FAULT_KILL_IN_CHECKPOINT=step-000020 "$loom" run "$work/partial.toml" --quiet > "$work/partial.log" 2>&1
code=$?
[ $code -eq 137 ] || fail "the fault-injected run exited $code, expected 137 (SIGKILL)"
[ -d "$work/runs/partial/checkpoints/.partial-step-000020" ] || fail "the killed checkpoint left no partial directory"
"$loom" run "$work/partial.toml" --resume auto --quiet > "$work/partial-resumed.log" 2>&1 \
  || fail "resume after a kill in a checkpoint: $(cat "$work/partial-resumed.log")"
grep -q "removed $work/runs/partial/checkpoints/.partial-step-000020" "$work/partial-resumed.log" \
  || fail "the removal of the partial checkpoint is not logged: $(cat "$work/partial-resumed.log")"
ls -a "$work/runs/partial/checkpoints" | grep -q '^\.partial-' && fail "a partial checkpoint is left: $(ls -a "$work/runs/partial/checkpoints")"
grep -qE "dropped [0-9]+ records after step 10 " "$work/partial-resumed.log" || fail "no drop logged after the kill at step 20"
expect_steps "$work/runs/partial/metrics.jsonl" 30 "resume after a kill in a checkpoint"

if [ $failures -ne 0 ]; then echo "$failures failed"; exit 1; fi
echo "run ownership: all passed"
