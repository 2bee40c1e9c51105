#!/usr/bin/env bash
# Recipe values outside their domain, through the CLI as a user gives them: every number option
# refuses nan and inf (naming the key and its allowed range) in `loom check` and before `loom run`
# writes anything; a run name that is not one directory name (.., ., a/b, empty) is refused the same
# way and nothing is written beside output_dir. Data: the GLUE fixtures (no download).
# Usage: recipe_domains_test.sh LOOM SOURCE_DIR
set -uo pipefail
loom=$1
src=$2
fixtures=$src/tests/fixtures/glue
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

mkdir -p "$work/parent/out"
recipe=$work/parent/recipe.toml
cat > "$recipe" <<TOML
[run]
name = "domains"
seed = 1
output_dir = "$work/parent/out"

[backend]
component = "cpu"
threads = 1

[precision]
component = "fp16-mixed"

[tokenizer]
component = "wordpiece"
vocab = "$fixtures/vocab.txt"

[data]
component = "text-classification"
task = "mrpc"
file = "$fixtures/mrpc/train.tsv"
max_seq_length = 32
batch_size = 8

[model]
config = "$fixtures/tiny-bert.json"
blocks = ["bert.embeddings", { block = "bert.encoder-layer", repeat = "num_hidden_layers" }, "bert.classifier-head"]

[optimizer]
component = "adamw"
lr = 1e-3

[schedule]
component = "poly-warmup"

[train]
steps = 1
log_every = 1

[metrics]
client_queue = 64

[squad]
n_best_size = 20
TOML

out=$("$loom" check "$recipe" 2>&1); code=$?
[ "$code" = 0 ] || fail "the base recipe does not check (exit $code): $out"

# KEY RANGE: each key refuses nan, inf and -inf, naming itself and its range.
while read -r key range; do
  for value in nan inf -inf; do
    out=$("$loom" check "$recipe" --set "$key=$value" 2>&1); code=$?
    [ "$code" = 2 ] || fail "check --set $key=$value: exit $code, expected 2"
    grep -qF -- "--set $key=$value: $key: value $value is not a finite number (allowed: $range)" <<<"$out" ||
      fail "check --set $key=$value does not name the key and its range: $out"
  done
done <<'KEYS'
optimizer.lr [0, inf)
optimizer.weight_decay [0, inf)
optimizer.max_grad_norm [0, inf)
optimizer.beta1 [0, 1)
optimizer.beta2 [0, 1)
optimizer.eps (0, 1]
schedule.warmup [0, 1]
schedule.degree [0, 100]
precision.initial_scale [1e-30, 1e+38]
precision.growth_factor (1, 1e+06]
precision.backoff_factor (0, 1)
precision.min_scale [1e-30, 1e+38]
precision.max_scale [1e-30, 1e+38]
train.allreduce_bucket_mb [0.001, 1e+06]
metrics.auth_timeout_s [0.01, 3600]
metrics.max_requests_per_s [0.01, 1e+06]
squad.null_score_diff_threshold [-1e+06, 1e+06]
KEYS

# Open ends: the value at the excluded end is refused too.
for case in "optimizer.beta1=1.0|[0, 1)" "optimizer.eps=0.0|(0, 1]" "precision.backoff_factor=1.0|(0, 1)"; do
  set_arg=${case%%|*}
  out=$("$loom" check "$recipe" --set "$set_arg" 2>&1); code=$?
  [ "$code" = 2 ] && grep -qF "is out of range ${case#*|}" <<<"$out" || fail "check --set $set_arg: exit $code: $out"
done

# Every problem at once, and in the SGD and linear-warmup components as well.
out=$("$loom" check "$recipe" --set optimizer.component=sgd --set optimizer.momentum=nan \
      --set schedule.component=linear-warmup --set schedule.warmup=nan 2>&1); code=$?
[ "$code" = 2 ] || fail "sgd/linear-warmup nan: exit $code"
grep -qF "optimizer.momentum: value nan is not a finite number (allowed: [0, 1])" <<<"$out" || fail "sgd momentum: $out"
grep -qF "schedule.warmup: value nan is not a finite number (allowed: [0, 1])" <<<"$out" || fail "linear-warmup: $out"
grep -qF "2 problems in $recipe" <<<"$out" || fail "both problems reported: $out"

# `loom run` refuses before it writes anything.
out=$("$loom" run "$recipe" --set optimizer.beta2=nan --quiet 2>&1); code=$?
[ "$code" = 2 ] || fail "run with beta2 = nan: exit $code, expected 2: $out"
grep -qF "optimizer.beta2: value nan is not a finite number" <<<"$out" || fail "run message: $out"
[ ! -e "$work/parent/out/domains" ] || fail "run with beta2 = nan created its run directory"

# Run names: one directory name under output_dir, or refused; nothing is written elsewhere.
before=$(cd "$work" && find . | sort)
for name in .. . a/b ../escaped '""' '"tab\there"'; do
  for verb in check "run --quiet"; do
    out=$("$loom" $verb "$recipe" --set "run.name=$name" 2>&1); code=$?
    [ "$code" = 2 ] || fail "$verb with run.name=$name: exit $code, expected 2: $out"
    grep -qF -- "--set run.name=$name: run.name: " <<<"$out" || fail "$verb run.name=$name does not name the key: $out"
    grep -qF "a run name is one directory name under run.output_dir" <<<"$out" || fail "$verb run.name=$name: $out"
  done
done
after=$(cd "$work" && find . | sort)
[ "$before" = "$after" ] || fail "refused run names wrote files: $(diff <(echo "$before") <(echo "$after"))"

# A good name trains where it says.
out=$("$loom" run "$recipe" --set run.name=ok.1 --set precision.component=fp32 --quiet 2>&1); code=$?
[ "$code" = 0 ] || fail "run with run.name=ok.1: exit $code: $out"
[ -e "$work/parent/out/ok.1/checkpoints/latest" ] || fail "run.name=ok.1 did not write out/ok.1: $(ls -R "$work/parent/out")"

if [ $failures -ne 0 ]; then echo "$failures failed"; exit 1; fi
echo "recipe value domains: all passed"
