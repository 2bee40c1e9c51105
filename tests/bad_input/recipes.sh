#!/usr/bin/env bash
# Recipes (TOML) through `loom check` and `loom run`: a syntax error, an unknown key or table, a
# value of the wrong type, a value outside its domain (nan and inf for every number option, open
# ends), a run name that is not one directory name, a sequence length beyond the model's positions
# — each refused with exit 2 and a message naming the file:line (or the --set) and the key, every
# problem of a recipe at once; a refused `loom run` writes nothing anywhere.
# Data: the GLUE fixtures (no download).
# Usage: recipes.sh LOOM SOURCE_DIR
set -euo pipefail
loom=$1
src=$2
source "$(dirname "$0")/lib.sh"
fixtures=$src/tests/fixtures

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
vocab = "$glue/vocab.txt"

[data]
component = "text-classification"
task = "mrpc"
file = "$glue/mrpc/train.tsv"
max_seq_length = 32
batch_size = 8

[model]
config = "$glue/tiny-bert.json"
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

[eval_data]
component = "text-classification"
task = "mrpc"
file = "$glue/mrpc/dev.tsv"
max_seq_length = 32
batch_size = 8
TOML
expect_ok "the base recipe checks" -- "$loom" check "$recipe"
snapshot "$work/parent" "$fixtures"
check() { "$loom" check "$recipe" "$@"; }
# edited SED: a copy of the recipe edited by sed, as $work/edited.toml.
edited() { sed "$1" "$recipe" > "$work/edited.toml"; }

# --- Syntax, keys and types: file:line:col and the key, every problem at once ---
f=$fixtures/three_mistakes.toml
expect_refusal 2 "$(lit "$f:4:1: run.sed: unknown key; did you mean 'seed'?")" -- "$loom" check "$f"
for problem in "$f:7:1: train.steps: expected an integer" "$f:10:1: communicator.component: no component communicator/locl" \
               "3 problems in $f"; do
  grep -qF "$problem" "$work/err" || fail "three_mistakes.toml: missing '$problem': $(cat "$work/err")"
done
edited 's/^\[train\]$/[train/'
expect_refusal 2 "$(lit "$work/edited.toml:35:7: syntax error: Error while parsing table header")" -- "$loom" check "$work/edited.toml"
edited 's/^seed = 1$/seed = = 1/'
expect_refusal 2 "$(lit "$work/edited.toml:3:8: syntax error:")" -- "$loom" check "$work/edited.toml"
edited 's/^steps = 1$/steps = 1\nsteps = 2/'
expect_refusal 2 "$(lit "$work/edited.toml:37:9: syntax error:").*cannot redefine existing integer 'steps'" -- "$loom" check "$work/edited.toml"
edited 's/^\[squad\]$/[trian]/'
expect_refusal 2 "$(lit "$work/edited.toml:42:1: unknown table [trian]; did you mean 'train'?")" -- "$loom" check "$work/edited.toml"
edited 's/^steps = 1$/steps = 1e3/'
expect_refusal 2 "$(lit "$work/edited.toml:36:1: train.steps: expected an integer, got number 1000.0")" -- "$loom" check "$work/edited.toml"
edited 's/^steps = 1$/steps = 99999999999999999999/'
expect_refusal 2 "$(lit "$work/edited.toml:36"):[0-9]+: syntax error: .*not representable in 64 bits" -- "$loom" check "$work/edited.toml"
edited 's/^name = "domains"$/name = 5/'
expect_refusal 2 "$(lit "$work/edited.toml:2:1: run.name: expected a string, got integer 5")" -- "$loom" check "$work/edited.toml"
expect_refusal 2 "$(lit "--set trian.steps=1")" -- check --set trian.steps=1
expect_refusal 2 "$(lit "--set train.steps: expected KEY=VALUE")" -- check --set train.steps
expect_refusal 2 "$(lit "--set train.steps=abc: 'abc' is not a valid value; train.steps expects an integer like the recipe's ($recipe:36:1)")" \
  -- check --set train.steps=abc
expect_refusal 2 "$(lit "$work/none.toml: recipe file not found")" -- "$loom" check "$work/none.toml"
# A folder read as TOML is an empty table: `loom check` called it valid.
expect_refusal 2 "$(lit "$work/parent: is a folder, not a recipe file")" -- "$loom" check "$work/parent"
expect_refusal 2 "has no \[backend\] table" -- "$loom" run "$fixtures/valid.toml"

# --- Number options: nan, inf and -inf refused, naming the key and its allowed range ---
while read -r key range; do
  for value in nan inf -inf; do
    expect_refusal 2 "$(lit "--set $key=$value: $key: value $value is not a finite number (allowed: $range)")" \
      -- check --set "$key=$value"
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
  expect_refusal 2 "$(lit "is out of range ${case#*|}")" -- check --set "${case%%|*}"
done
# Every problem at once, in the SGD and linear-warmup components as well.
expect_refusal 2 "$(lit "optimizer.momentum: value nan is not a finite number (allowed: [0, 1])")" \
  -- check --set optimizer.component=sgd --set optimizer.momentum=nan --set schedule.component=linear-warmup \
  --set schedule.warmup=nan
grep -qF "schedule.warmup: value nan is not a finite number (allowed: [0, 1])" "$work/err" || fail "linear-warmup: $(cat "$work/err")"
grep -qF "2 problems in $recipe" "$work/err" || fail "both problems reported: $(cat "$work/err")"
expect_refusal 2 "$(lit "optimizer.beta2: value nan is not a finite number")" \
  -- "$loom" run "$recipe" --set optimizer.beta2=nan --quiet

# --- Run names: one directory name under output_dir ---
for name in .. . a/b ../escaped '""' '"tab\there"'; do
  for verb in check "run --quiet"; do
    # shellcheck disable=SC2086 # the verb and its flag
    expect_refusal 2 "$(lit "--set run.name=$name: run.name: ").*a run name is one directory name under run.output_dir" \
      -- "$loom" $verb "$recipe" --set "run.name=$name"
  done
done

# --- Sequence lengths beyond the model's positions (64 in tiny-bert.json): named with both values ---
for table in data eval_data; do
  expect_refusal 2 "$(lit "--set $table.max_seq_length=128: $table.max_seq_length: 128 is longer than the model's max_position_embeddings = 64 ($glue/tiny-bert.json)")" \
    -- "$loom" run "$recipe" --set "$table.max_seq_length=128" --quiet
done
edited 's/^max_seq_length = 32$/max_seq_length = 65/'
expect_refusal 2 "$(lit "$work/edited.toml:21:1: data.max_seq_length: 65 is longer than the model's max_position_embeddings = 64")" \
  -- "$loom" check "$work/edited.toml"
# Without the key, the dataset's default (128) is what the run would use: refused when it opens.
edited '21d'
expect_refusal 2 "$(lit "[data]: its sequences are up to 128 tokens long (data.max_seq_length, or its default when the recipe sets none), longer than the model's max_position_embeddings = 64")" \
  -- "$loom" run "$work/edited.toml" --set run.name=default-length --set precision.component=fp32 --quiet
[ ! -e "$work/parent/out/default-length/checkpoints" ] || fail "the default-length run trained"
rm -rf "$work/parent/out/default-length"  # the run directory a started run makes

# Nothing was written by any refused command.
unchanged "$work/parent" "$fixtures"
# A good name trains where it says.
expect_ok "run.name=ok.1" -- "$loom" run "$recipe" --set run.name=ok.1 --set precision.component=fp32 --quiet
[ -e "$work/parent/out/ok.1/checkpoints/latest" ] || fail "run.name=ok.1 did not write out/ok.1: $(ls -R "$work/parent/out")"
finish
