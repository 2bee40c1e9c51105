#!/usr/bin/env bash
# `loom bench --inference` on a micro-BERT (tests/fixtures/train/micro-bert.json), a few requests
# per row: every batch size × sequence length × precision is reported once, with positive rates
# and ordered latency statistics (min ≤ p50 ≤ p90 ≤ p99 ≤ max, which percentiles guarantee: no
# timing is asserted), and the head's outputs are what was read back — the span head's start/end
# logits, a classifier sized by its data's label count, the pre-training heads without their
# decoder. Bad arguments are usage errors that name the problem.
# Usage: inference_bench_test.sh LOOM SOURCE_DIR
set -uo pipefail
loom=$1
src=$2
work=$(mktemp -d /tmp/loom-inference-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

recipe() { # name head data-lines
  cat > "$work/$1.toml" <<TOML
[run]
name = "$1"
seed = 3

[backend]
component = "cpu"
threads = 1

[tokenizer]
component = "wordpiece"
vocab = "$src/plugins/wordpiece/tests/data/bert-base-uncased-vocab.txt"

$3

[model]
config = "$src/tests/fixtures/train/micro-bert.json"
blocks = ["bert.embeddings", { block = "bert.encoder-layer", repeat = "num_hidden_layers" }, "$2"]
TOML
}
recipe span bert.span-head '[data]
component = "squad"
file = "'"$src"'/plugins/datasets/tests/data/squad_v1.1.json"
max_seq_length = 64
doc_stride = 32
max_query_length = 24'
printf 'label\ttext\n' > "$work/three.tsv"
for i in 1 2 3 4 5 6; do printf '%s\tsentence number %s\n' "$(echo a b c | cut -d' ' -f$(( (i - 1) % 3 + 1 )))" "$i" >> "$work/three.tsv"; done
recipe classifier bert.classifier-head '[data]
component = "text-classification"
file = "'"$work"'/three.tsv"
max_seq_length = 32
batch_size = 2'
recipe pretraining bert.pretraining-heads ''  # no [data]: nothing to size, the config decides

# Checks one JSON report: mode, head, outputs, one row per combination, rates and statistics.
check_report() { # file head batches seqs precisions bytes-per-row-expression
  /usr/bin/python3 - "$@" <<'PY'
import itertools, json, math, sys
path, head, batches, seqs, precisions, bytes_expr = sys.argv[1:]
r = json.load(open(path))
problems = []
def want(ok, what):
    if not ok: problems.append(what)
want(r.get("mode") == "inference", f"mode {r.get('mode')!r}")
want(r.get("head") == head, f"head {r.get('head')!r}, expected {head}")
want(r.get("threads") == 1, f"threads {r.get('threads')!r}")
want(isinstance(r.get("parameters"), int) and r["parameters"] > 0, "parameters")
want(r.get("steps") == 3 and r.get("warmup") == 1, "steps/warmup not as given")
want(r.get("peak_rss_mib", 0) > 0, "peak_rss_mib")
batches = [int(b) for b in batches.split(",")]
seqs = [int(s) for s in seqs.split(",")]
precisions = precisions.split(",")
rows = r.get("results", [])
seen = sorted((x["precision"], x["batch"], x["seq"]) for x in rows)
want(seen == sorted(itertools.product(precisions, batches, seqs)), f"rows {seen}")
for x in rows:
    name = f"{x['precision']} b{x['batch']} s{x['seq']}"
    for key in ("sequences_per_second", "tokens_per_second", "model_tflops_per_second"):
        want(math.isfinite(x[key]) and x[key] > 0, f"{name}: {key} = {x[key]}")
    ms = x["latency_ms"]
    order = [ms[k] for k in ("min", "p50", "p90", "p99", "max")]
    want(all(a <= b for a, b in zip(order, order[1:])) and order[0] > 0, f"{name}: latency order {order}")
    want(ms["min"] <= ms["mean"] <= ms["max"], f"{name}: mean outside [min, max]")
    want(abs(x["sequences_per_second"] - x["batch"] * 1e3 / ms["mean"]) <= 1e-6 * x["sequences_per_second"],
         f"{name}: sequences/s is not batch / mean latency")
    expected = eval(bytes_expr, {"b": x["batch"], "t": x["seq"]})
    want(x["output_bytes"] == expected, f"{name}: read back {x['output_bytes']} bytes, expected {expected}")
print("\n".join(problems) if problems else "ok", end="")
print(" | outputs:", ",".join(r.get("outputs", [])))
sys.exit(1 if problems else 0)
PY
}

run_json() { # name out args...
  local name=$1 out=$2; shift 2
  "$loom" bench "$work/$name.toml" --inference --steps 3 --warmup 1 --json "$@" > "$work/$out.json" 2> "$work/$out.log"
  local code=$?
  [ $code -eq 0 ] || { cat "$work/$out.log"; fail "$out: loom bench --inference exited $code"; return 1; }
}

# 1. Span head, fp32 and bf16: start and end logits (f32, [B, T] each) come back.
if run_json span span --batch-sizes 1,2 --seq-lengths 16,32 --precisions fp32,bf16; then
  out=$(check_report "$work/span.json" bert.span-head 1,2 16,32 fp32,bf16 "2 * 4 * b * t") || fail "span: $out"
  echo "span: $out"
  echo "$out" | grep -q "outputs: start_logits,end_logits$" || fail "span: outputs are not start_logits,end_logits"
fi

# 2. Classifier: three labels from its data, so [B, 3] logits.
if run_json classifier classifier --batch-sizes 2 --seq-lengths 8,16 --precisions fp32; then
  out=$(check_report "$work/classifier.json" bert.classifier-head 2 8,16 fp32 "4 * 3 * b") || fail "classifier: $out"
  echo "classifier: $out"
  echo "$out" | grep -q "outputs: logits$" || fail "classifier: outputs are not logits"
fi

# 3. Pre-training heads without [data]: NSP logits and the two scalar losses, no MLM logits.
if run_json pretraining pretraining --batch-sizes 3 --seq-lengths 8 --precisions fp32,fp16; then
  out=$(check_report "$work/pretraining.json" bert.pretraining-heads 3 8 fp32,fp16 "4 + 4 + 2 * 4 * b") \
    || fail "pretraining: $out"
  echo "pretraining: $out"
  echo "$out" | grep -q "outputs: mlm_loss,nsp_loss,seq_relationship_logits$" || fail "pretraining: outputs"
fi

# 4. The table: a header and one line per row.
"$loom" bench "$work/span.toml" --inference --steps 2 --warmup 0 --batch-sizes 1 --seq-lengths 8,16 \
  --precisions fp32 > "$work/table.txt" 2>&1 || { cat "$work/table.txt"; fail "table run"; }
grep -q "inference through bert.span-head (reading back start_logits, end_logits)" "$work/table.txt" \
  || fail "table: no title line: $(head -2 "$work/table.txt")"
grep -Eq "batch +seq +precision +seq/s +p50 ms +p90 ms +p99 ms" "$work/table.txt" || fail "table: no header"
[ "$(grep -Ec '^ +1 +(8|16) +fp32 ' "$work/table.txt")" -eq 2 ] || fail "table: expected 2 rows: $(cat "$work/table.txt")"

# 5. Usage errors (exit 2) that say what is wrong.
expect_usage_error() { # pattern args...
  local pattern=$1; shift
  "$loom" bench "$work/span.toml" "$@" > "$work/error.log" 2>&1
  local code=$?
  [ $code -eq 2 ] || fail "$*: exit $code, expected 2"
  grep -q -- "$pattern" "$work/error.log" || fail "$*: message lacks '$pattern': $(cat "$work/error.log")"
}
expect_usage_error "max_position_embeddings (128)" --inference --seq-lengths 16,200 --steps 1
expect_usage_error "no precision component fp8" --inference --precisions fp8 --steps 1
expect_usage_error "requires --inference" --batch-sizes 4

[ $failures -eq 0 ] || { echo "$failures failure(s)"; exit 1; }
echo "loom bench --inference: all checks passed"
