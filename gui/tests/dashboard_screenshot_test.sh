#!/usr/bin/env bash
# A real loom-dash window under Xvfb with Mesa: replay a real run's metrics.jsonl, save a screenshot
# and check every plot holds drawn data; then replay an empty file and check that the same check
# fails (the check can fail); attach to a stream that drops the connection and check loom-dash
# reconnects and says so. Skips (77) when xvfb-run is absent.
# Usage: dashboard_screenshot_test.sh LOOM_DASH SCREENSHOT_CHECK FIXTURE_RUN_DIR
set -uo pipefail
dash=$1
check=$2
fixture=$3
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
  "$check" "$work/dash.png" "$work/layout.json" || fail "a plot holds no drawn data"
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

[ $failures -eq 0 ] && echo "dashboard screenshot: all checks passed"
exit $((failures > 0))
