# Sourced by every area script of the bad-input suite (docs/decisions/bad-input-suite.md).
# Expects `loom` (the binary) and `src` (the source tree) set; sets `work` (a scratch folder
# removed on exit) and `glue` (the GLUE fixtures: a 151-token vocabulary and a tiny BERT).
#
#   expect_refusal CODE REGEX -- COMMAND...
#       COMMAND exits CODE and its standard error matches the extended regex REGEX (the file and
#       the key, line or row it names). Its output is kept in $work/out and $work/err.
#   expect_ok WHAT -- COMMAND...      COMMAND exits 0 (the valid input next to each bad one).
#   lit TEXT                          TEXT as a regex matching itself (paths, brackets).
#   snapshot PATH... / unchanged PATH...
#       Records every file under PATH (a folder or a file) with its sha256, and every folder, then
#       asserts that nothing was changed, added or removed since.
#   remanifest DIR                    rewrites a checkpoint's MANIFEST for its files as they are,
#                                     so an edited file is refused for its content, not its sum.
#   classifier_recipe NAME [TOML]     a tiny MRPC classifier recipe on the GLUE fixtures ($work/NAME.toml).
#   span_recipe NAME                  a tiny SQuAD span head on three questions ($work/facts.json).
#   finish                            prints the count and exits 1 on any failure.
work=$(mktemp -d /tmp/loom-bad-input-XXXXXX)
trap 'rm -rf "$work"' EXIT
glue=$src/tests/fixtures/glue
cases=0
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

expect_refusal() {
  local want=$1 pattern=$2
  shift 3  # CODE REGEX --
  cases=$((cases + 1))
  local code=0
  "$@" > "$work/out" 2> "$work/err" || code=$?
  if [ "$code" -ne "$want" ]; then
    fail "exit $code, expected $want: $(printf '%q ' "$@" | cut -c1-300)"$'\n'"  $(tail -3 "$work/err")"
  elif ! grep -Eq -- "$pattern" "$work/err"; then
    fail "the message does not match /$pattern/: $(printf '%q ' "$@" | cut -c1-300)"$'\n'"  $(tail -3 "$work/err")"
  fi
  # A library's own wording is no message for a user.
  if grep -q "json.exception\|terminate called\|std::" "$work/err"; then
    fail "an internal message reached the user: $(tail -3 "$work/err")"
  fi
  return 0
}

expect_ok() {
  local what=$1
  shift 2  # WHAT --
  "$@" > "$work/out" 2> "$work/err" || fail "$what: exit $?: $(tail -3 "$work/err")"
}

lit() { sed 's/[][\.*^$+?(){}|]/\\&/g' <<<"$1"; }

# The listing of DIR: every folder, every file with its sha256 (of a file: its sha256).
listing() {
  if [ -f "$1" ]; then sha256sum < "$1"; return; fi
  (cd "$1" && find . -type d | sort && find . -type f -print0 | sort -z | xargs -0r sha256sum)
}
snapshot_file() { echo "$work/.snapshot-$(echo "$1" | sha256sum | cut -c1-16)"; }
snapshot() {
  local dir
  for dir in "$@"; do listing "$dir" > "$(snapshot_file "$dir")"; done
}
unchanged() {
  local dir
  for dir in "$@"; do
    listing "$dir" | diff "$(snapshot_file "$dir")" - > "$work/diff" ||
      fail "$dir changed: $(head -6 "$work/diff")"
  done
}

remanifest() {
  local name
  : > "$work/MANIFEST"
  while read -r _ name; do
    if [ -f "$1/$name" ]; then (cd "$1" && sha256sum "$name"); else grep -F "  $name" "$1/MANIFEST"; fi
  done < "$1/MANIFEST" >> "$work/MANIFEST"
  cp "$work/MANIFEST" "$1/MANIFEST"
}

# The [run], [backend] and [tokenizer] tables every recipe of the suite starts with: run NAME (seed
# SEED when given), runs under $work, one CPU thread, the GLUE fixture's vocabulary.
recipe_head() {
  cat <<TOML
[run]
name = "$1"
${2:+seed = $2
}output_dir = "$work/runs"

[backend]
component = "cpu"
threads = 1

[tokenizer]
component = "wordpiece"
vocab = "$glue/vocab.txt"

TOML
}

# The tables every recipe of the suite ends with: the tiny BERT with head block HEAD, AdamW at 1e-3,
# a constant schedule, STEPS steps and the [train] lines EXTRA.
recipe_tail() {
  cat <<TOML
[model]
config = "$glue/tiny-bert.json"
blocks = ["bert.embeddings", { block = "bert.encoder-layer", repeat = "num_hidden_layers" }, "$1"]

[optimizer]
component = "adamw"
lr = 1e-3

[schedule]
component = "constant"

[train]
steps = $2
${3:-}
TOML
}

classifier_recipe() {
  { recipe_head "$1" 3; cat <<TOML; recipe_tail bert.classifier-head 2 "log_every = 1"; cat <<TOML2; } > "$work/$1.toml"
[data]
component = "text-classification"
task = "mrpc"
file = "$glue/mrpc/train.tsv"
max_seq_length = 32
batch_size = 8

[eval_data]
component = "text-classification"
task = "mrpc"
file = "$glue/mrpc/dev.tsv"
max_seq_length = 32
batch_size = 8
shuffle = false

TOML
[checkpoint]
every = 0
keep = 1
${2:-}
TOML2
}

span_recipe() {
  /usr/bin/python3 - "$work/facts.json" <<'PY'
import json, sys
facts = [("stark shares rose two percent last month .", "what rose ?", "stark shares"),
         ("the cat sat on the mat on friday .", "where did the cat sit ?", "on the mat"),
         ("initech stock jumped seven percent .", "how much did initech stock jump ?", "seven percent")]
paragraphs = [{"context": c, "qas": [{"id": f"q{i}", "question": q,
                                      "answers": [{"text": a, "answer_start": c.index(a)}]}]}
              for i, (c, q, a) in enumerate(facts)]
json.dump({"version": "1.1", "data": [{"title": "facts", "paragraphs": paragraphs}]}, open(sys.argv[1], "w"))
PY
  { recipe_head "$1" 3; cat <<TOML; recipe_tail bert.span-head 2 "log_every = 1"; } > "$work/$1.toml"
[data]
component = "squad"
file = "$work/facts.json"
max_seq_length = 64
doc_stride = 32
max_query_length = 16
batch_size = 8

TOML
}

finish() {
  echo "$cases cases, $failures failure(s)"
  [ "$failures" -eq 0 ]
}
