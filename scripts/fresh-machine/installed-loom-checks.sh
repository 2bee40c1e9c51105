#!/usr/bin/env bash
# Runs inside a fresh root (check-packages): what a user of an installed Loom does first, with the
# installed binary only. Expects /srv/loom/data/ (vocabulary, corpora and spam task from
# scripts/fetch-data).
# Usage: installed-loom-checks.sh LOOM SHARE_DIR   (SHARE_DIR: the install's share/loom)
set -euo pipefail
loom=$1
share=$2
step() { echo "== [$(basename "$(dirname "$(dirname "$loom")")")] $*"; }
cd /srv/loom
step "loom --version"; "$loom" --version
step "loom plugins"; "$loom" plugins | tee /tmp/plugins.txt
for plugin in backend-cpu bert comm-local datasets optimizers precision wordpiece; do
  grep -q "libloom-$plugin.so" /tmp/plugins.txt || { echo "plugin $plugin was not found" >&2; exit 1; }
done
# The quickstart's recipes use the vocabulary scripts/quickstart learns from the corpora.
step "quickstart-vocab"; bash /srv/quickstart-vocab "$loom" data
for recipe in $(find "$share/configs" -name '*.toml' | sort); do
  step "loom check $recipe"; "$loom" check "$recipe"
done
step "5 training steps of bert-tiny (spam fine-tuning from random initialisation)"
start=$(date +%s)
"$loom" run "$share/configs/quickstart/finetune-spam.toml" --set model.init_from= --set train.steps=5 \
  --set train.log_every=1 --set train.eval_every=0 --set checkpoint.every=5 \
  --set run.name=package-check --set run.output_dir=/tmp/package-check-runs
test -f /tmp/package-check-runs/package-check/checkpoints/step-000005/model.safetensors
step "5 steps took $(( $(date +%s) - start )) s"
