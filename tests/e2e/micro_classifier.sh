# Sourced by the `loom bench` tests: a micro-BERT text classifier (tests/fixtures/train/micro-bert.json)
# on eight sentences of three labels, in the test's $work folder, with $src the source tree.
#   micro_classifier_data       writes $work/three.tsv
#   micro_classifier_recipe NAME SEED
#                               prints the recipe's shared tables ([run], [tokenizer], [data],
#                               [model], [optimizer]: AdamW 1e-3); the test adds [backend],
#                               [schedule] and what it varies
micro_classifier_data() {
  printf 'label\ttext\n' > "$work/three.tsv"
  for i in 1 2 3 4 5 6 7 8; do
    printf '%s\tsentence number %s of the bench test\n' "$(echo a b c | cut -d' ' -f$(( (i - 1) % 3 + 1 )))" "$i" \
      >> "$work/three.tsv"
  done
}

micro_classifier_recipe() {
  cat <<TOML
[run]
name = "$1"
seed = $2

[tokenizer]
component = "wordpiece"
vocab = "$src/plugins/wordpiece/tests/data/bert-base-uncased-vocab.txt"

[data]
component = "text-classification"
file = "$work/three.tsv"
max_seq_length = 32
batch_size = 4

[model]
config = "$src/tests/fixtures/train/micro-bert.json"
blocks = ["bert.embeddings", { block = "bert.encoder-layer", repeat = "num_hidden_layers" }, "bert.classifier-head"]

[optimizer]
component = "adamw"
lr = 1e-3
TOML
}
