// `loom vocab train --input PATH... --size N --output vocab.txt [--cased] [--min-frequency F]`:
// learns a WordPiece vocabulary (host/prep/wordpiece_trainer.cpp), writes it atomically, then
// tokenizes the training text with it and reports the [UNK] count (0 by construction, apart from
// pieces over 100 characters, which BERT maps to [UNK] whatever the vocabulary).
// With `--kind bpe` it learns a byte-level BPE and writes a tokenizer.json (vocab_train_bpe.cpp).
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli_context.hpp"
#include "files/file_writer.hpp"
#include "recipe/errors.hpp"
#include "prep/wordpiece_trainer.hpp"
#include "vocab_train_bpe.hpp"
#include "vocab_training_inputs.hpp"
#include "wordpiece_component.hpp"

namespace loom::cli {
namespace {

namespace fs = std::filesystem;

struct VocabTrainArguments {
  std::string kind = "wordpiece";
  std::vector<std::string> inputs;
  size_t size = 30522;
  std::string output;
  bool cased = false;
  uint64_t min_frequency = 2;
  bool add_prefix_space = false;
};

void write_vocabulary(const std::vector<std::string>& tokens, const fs::path& output) {
  host::FileWriter out(output);
  for (const auto& token : tokens) out.write(token + '\n');
  out.commit();
}

void train(const GlobalOptions& options, const VocabTrainArguments& args) {
  const std::vector<fs::path> files = vocab_training_files(args.inputs);
  // A tokenizer with only the special tokens: its pre_tokenize is the word splitter.
  TemporaryFile specials{fs::temp_directory_path() / fmt::format("loom-vocab-specials-{}.txt", ::getpid())};
  write_vocabulary(host::bert_special_token_layout(), specials.path);
  auto splitter = create_wordpiece(options, specials.path.string(), args.cased, "loom vocab train");

  host::WordCounts counts;
  std::string scratch(1 << 16, '\0');
  uint64_t bytes = 0;
  splitter.call([&](loom::Tokenizer& t) {
    for_each_training_line(files, [&](const std::string& line) {
      host::count_words(t, line, counts, scratch);
      bytes += line.size() + 1;
    });
  });
  std::cerr << fmt::format("loom vocab train: {} files, {:.1f} MB, {} distinct words\n", files.size(),
                           static_cast<double>(bytes) / 1e6, counts.size());
  // Text without a word (empty files, whitespace) would give a vocabulary of special tokens only.
  if (counts.empty())
    throw host::InputError(
        fmt::format("--input {}: no words to learn a vocabulary from (the {} {} hold{} no text)",
                    fmt::join(args.inputs, " "), files.size(), files.size() == 1 ? "file" : "files",
                    files.size() == 1 ? "s" : ""));

  host::WordpieceTrainingStats stats;
  const std::vector<std::string> vocabulary =
      host::learn_wordpiece_vocabulary(counts, args.size, args.min_frequency, &stats);
  write_vocabulary(vocabulary, args.output);
  std::cout << fmt::format("{}: {} entries (104 special, {} alphabet, {} merges; {} words, {} distinct)\n",
                           args.output, stats.vocabulary, stats.alphabet, stats.merges, stats.words,
                           stats.unique_words);

  // Round trip: the training text through the new vocabulary.
  auto trained = create_wordpiece(options, args.output, args.cased, "loom vocab train --output");
  uint64_t tokens = 0, unknown = 0;
  trained.call([&](loom::Tokenizer& t) {
    const int32_t unk = t.special_token_ids().unk;
    std::vector<int32_t> ids;
    for_each_training_line(files, [&](const std::string& line) {
      if (ids.size() < line.size() + 1) ids.resize(line.size() + 1);
      const size_t n = t.tokenize(line.data(), line.size(), ids.data(), ids.size());
      tokens += n;
      unknown += static_cast<uint64_t>(std::count(ids.begin(), ids.begin() + static_cast<ptrdiff_t>(n), unk));
    });
  });
  std::cout << fmt::format("round trip on the training text: {} tokens, {} [UNK]\n", tokens, unknown);
}

void register_vocab_verbs(CLI::App& app, GlobalOptions& options) {
  auto* vocab = app.add_subcommand("vocab", "WordPiece vocabularies and byte-level BPE tokenizers");
  vocab->require_subcommand(1);
  auto args = std::make_shared<VocabTrainArguments>();
  auto* train_verb =
      vocab->add_subcommand("train", "learn a WordPiece vocabulary (BERT layout) or a byte-level BPE tokenizer.json");
  train_verb->add_option("--kind", args->kind, "wordpiece: vocab.txt; bpe: tokenizer.json (RoBERTa's layout)")
      ->capture_default_str()
      ->check(CLI::IsMember({"wordpiece", "bpe"}));
  train_verb->add_option("--input", args->inputs, "text files or directories (recursive)")->required();
  train_verb->add_option("--size", args->size, "vocabulary entries, special tokens included")
      ->capture_default_str()
      ->check(CLI::Range(size_t{105}, size_t{10000000}));
  train_verb->add_option("--output", args->output, "vocab.txt (wordpiece) or tokenizer.json (bpe) to write")
      ->required();
  train_verb->add_flag("--cased", args->cased, "keep case and accents");
  train_verb->add_option("--min-frequency", args->min_frequency, "stop when no pair occurs this often")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  train_verb->add_flag("--add-prefix-space", args->add_prefix_space,
                        "bpe: a space before each text, so a first word spells as a later one");
  add_plugin_flags(*train_verb, options);
  train_verb->callback([&options, args, train_verb] {
    if (args->kind == "wordpiece") {
      if (args->add_prefix_space) throw host::RecipeError("--add-prefix-space: applies to --kind bpe only");
      train(options, *args);
      return;
    }
    if (args->cased) throw host::RecipeError("--cased: applies to --kind wordpiece only (byte-level BPE keeps case)");
    BpeVocabArguments bpe{args->inputs, args->size, args->output, args->min_frequency, args->add_prefix_space};
    if (train_verb->count("--size") == 0) bpe.size = 30000;  // tokenizers' BpeTrainer default
    train_bpe_vocabulary(options, bpe);
  });
}

const VerbRegistration registration(&register_vocab_verbs);

}  // namespace
}  // namespace loom::cli
