#!/usr/bin/env bash
# Checkpoints through `loom run --resume`, `model.init_from`, `loom predict` and `loom eval`: a
# damaged MANIFEST, state.json out of its domain (step -5, 1e23, a string), config.json
# disagreeing with the weights or not parsing, weights cut short or changed since they were
# written. Each is refused with exit 1 (a checkpoint is the run's own state, not a recipe: docs/
# checkpoints.md), the message naming the checkpoint or the file and the key; the run's
# metrics.jsonl and every checkpoint stay byte for byte as they were.
# Copies of one trained checkpoint are damaged; where only a value should be wrong, the copy's
# MANIFEST is rewritten so that the sums match.
# Usage: checkpoints.sh LOOM SOURCE_DIR
set -euo pipefail
loom=$1
src=$2
source "$(dirname "$0")/lib.sh"

classifier_recipe fine
expect_ok "training the checkpoint" -- "$loom" run "$work/fine.toml" --quiet
run=$work/runs/fine
checkpoint=$run/checkpoints/step-000002
printf 'text\ttext_pair\nthe cat sat .\ta dog ran .\n' > "$work/pairs.tsv"
expect_ok "loom predict on the intact checkpoint" -- "$loom" predict --checkpoint "$checkpoint" --input "$work/pairs.tsv"
snapshot "$run/checkpoints" "$run/metrics.jsonl"

# damaged NAME COMMAND...: $work/NAME, a copy of the checkpoint changed by COMMAND (run in it),
# its MANIFEST rewritten; `damaged_as_is` leaves the MANIFEST as it was.
damaged_as_is() {
  rm -rf "${work:?}/$1"
  cp -r "$checkpoint" "$work/$1"
  (cd "$work/$1" && "${@:2}")
}
damaged() { damaged_as_is "$@"; remanifest "$work/$1"; }
resume() { "$loom" run "$work/fine.toml" --resume "$work/$1" --set train.steps=4 --quiet; }
predict() { "$loom" predict --checkpoint "$work/$1" --input "$work/pairs.tsv"; }
evaluate() { "$loom" eval "$work/fine.toml" --checkpoint "$work/$1"; }
init_from() { "$loom" run "$work/fine.toml" --set "run.name=from-$1" --set "model.init_from=$work/$1" --quiet; }

# --- state.json: every count a whole number from 0 ---
for step in -5 1e23 '"six"'; do
  damaged step "sed" -i "s/\"step\": 2,/\"step\": $step,/" state.json
  grep -qF "\"step\": $step," "$work/step/state.json" || fail "state.json was not edited: $(head -3 "$work/step/state.json")"
  case $step in
    -5) want="step: -5 is negative" ;;
    1e23) want="step: 1e+23 is not a whole number" ;;
    *) want="step: \"six\" is not a whole number" ;;
  esac
  expect_refusal 1 "$(lit "$work/step/state.json: $want")" -- resume step
done
damaged state sed -i '/"step": 2,/d' state.json
expect_refusal 1 "$(lit "$work/state/state.json: step: missing")" -- resume state
damaged state sh -c 'echo "{\"step\": " > state.json'
expect_refusal 1 "$(lit "$work/state/state.json: not valid JSON at line 2, column 1")" -- resume state

# --- MANIFEST: the sums of the files as written ---
damaged_as_is manifest sed -i 's/"seed": 3/"seed": 4/' state.json
expect_refusal 1 "$(lit "checkpoint $work/manifest is damaged: state.json does not match its sha256 in MANIFEST")" -- resume manifest
damaged_as_is manifest rm MANIFEST
expect_refusal 1 "$(lit "checkpoint $work/manifest is damaged: no MANIFEST")" -- resume manifest
damaged_as_is manifest rm model.safetensors
expect_refusal 1 "$(lit "checkpoint $work/manifest is damaged: model.safetensors is missing")" -- resume manifest
expect_refusal 1 "$(lit "$work/manifest/model.safetensors: no such file")" -- predict manifest
expect_refusal 1 "$(lit "$work/nowhere: no such checkpoint directory")" -- resume nowhere
expect_refusal 2 "$(lit "$work/nowhere: no such checkpoint directory (--checkpoint)")" -- predict nowhere

# --- Weights: cut short, or changed since they were written ---
damaged weights sh -c 'head -c 5000 model.safetensors > cut && mv cut model.safetensors'
for verb in resume predict evaluate init_from; do
  expect_refusal 1 "$(lit "$work/weights/model.safetensors: not a valid safetensors file: tensor").*beyond the data region.*truncated" \
    -- "$verb" weights
done
damaged weights sh -c 'head -c 5000 optimizer.safetensors > cut && mv cut optimizer.safetensors'
expect_refusal 1 "$(lit "$work/weights/optimizer.safetensors: not a valid safetensors file")" -- resume weights
# Finite values changed in place (a flipped byte, a hand edit): the MANIFEST no longer matches.
# loom predict, loom eval and init_from used to answer and train with them.
damaged_as_is changed /usr/bin/python3 -c '
blob = bytearray(open("model.safetensors", "rb").read())
blob[-4000:-3000] = bytes(1000)
open("model.safetensors", "wb").write(blob)'
for verb in resume predict evaluate init_from; do
  expect_refusal 1 "$(lit "checkpoint $work/changed is damaged: model.safetensors does not match its sha256 in MANIFEST")" \
    -- "$verb" changed
done

# --- config.json: the weights' shapes, and JSON ---
for layers in 1 3; do
  damaged layers sed -i "s/\"num_hidden_layers\": 2/\"num_hidden_layers\": $layers/" config.json
  expect_refusal 1 "$(lit "num_hidden_layers = $layers, but the weights hold encoder layers 0–1 (2 layers)")" -- predict layers
done
damaged hidden sed -i 's/"hidden_size": 128/"hidden_size": 64/' config.json
for verb in resume predict evaluate init_from; do
  expect_refusal 1 "$(lit "hidden_size = 64, but bert.embeddings.word_embeddings.weight has 128 there (shape [151, 128])")" \
    -- "$verb" hidden
done
damaged config sed -i 's/"num_hidden_layers": 2/"num_hidden_layers": "two"/' config.json
expect_refusal 1 "$(lit "$work/config/config.json: num_hidden_layers: expected an integer, got \"two\"")" -- predict config
damaged config sh -c 'echo "{" > config.json'
expect_refusal 1 "$(lit "$work/config/config.json: not valid JSON at line 2, column 1")" -- predict config
expect_refusal 1 "$(lit "$work/config/config.json: not valid JSON at line 2, column 1")" -- evaluate config

[ -z "$(ls -d "$work"/runs/from-*/checkpoints 2> /dev/null)" ] || fail "init_from a damaged checkpoint trained"
unchanged "$run/checkpoints" "$run/metrics.jsonl"
finish
