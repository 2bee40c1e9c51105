// `loom vocab train --input PATH... --size N --output vocab.txt [--cased] [--min-frequency F]`:
// learns a WordPiece vocabulary (host/prep/wordpiece_trainer.cpp), writes it atomically, then
// tokenizes the training text with it and reports the [UNK] count (0 by construction, apart from
// pieces over 100 characters, which BERT maps to [UNK] whatever the vocabulary).
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
#include "wordpiece_component.hpp"

namespace loom::cli {
namespace {

namespace fs = std::filesystem;

struct VocabTrainArguments {
  std::vector<std::string> inputs;
  size_t size = 30522;
  std::string output;
  bool cased = false;
  uint64_t min_frequency = 2;
};

// Files named, and every regular file under directories named, each group sorted.
std::vector<fs::path> input_files(const std::vector<std::string>& inputs) {
  std::vector<fs::path> files;
  for (const auto& input : inputs) {
    if (fs::is_directory(input)) {
      std::vector<fs::path> found;
      for (const auto& entry : fs::recursive_directory_iterator(input))
        if (entry.is_regular_file()) found.push_back(entry.path());
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::is_regular_file(input)) {
      files.emplace_back(input);
    } else {
      throw host::RecipeError(fmt::format("--input {}: no such file or directory", input));
    }
  }
  if (files.empty()) throw host::RecipeError("--input: the inputs hold no files");
  return files;
}

// A file removed when the scope ends.
struct TemporaryFile {
  fs::path path;
  ~TemporaryFile() {
    std::error_code ignored;
    fs::remove(path, ignored);
  }
};

template <typename PerLine>
void for_each_line(const std::vector<fs::path>& files, PerLine&& per_line) {
  std::string line;
  for (const auto& file : files) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw std::runtime_error(file.string() + ": cannot read");
    while (std::getline(in, line)) per_line(line);
  }
}

void write_vocabulary(const std::vector<std::string>& tokens, const fs::path& output) {
  host::FileWriter out(output);
  for (const auto& token : tokens) out.write(token + '\n');
  out.commit();
}

void train(const GlobalOptions& options, const VocabTrainArguments& args) {
  const std::vector<fs::path> files = input_files(args.inputs);
  // A tokenizer with only the special tokens: its pre_tokenize is the word splitter.
  TemporaryFile specials{fs::temp_directory_path() / fmt::format("loom-vocab-specials-{}.txt", ::getpid())};
  write_vocabulary(host::bert_special_token_layout(), specials.path);
  auto splitter = create_wordpiece(options, specials.path.string(), args.cased, "loom vocab train");

  host::WordCounts counts;
  std::string scratch(1 << 16, '\0');
  uint64_t bytes = 0;
  splitter.call([&](loom::Tokenizer& t) {
    for_each_line(files, [&](const std::string& line) {
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
    for_each_line(files, [&](const std::string& line) {
      if (ids.size() < line.size() + 1) ids.resize(line.size() + 1);
      const size_t n = t.tokenize(line.data(), line.size(), ids.data(), ids.size());
      tokens += n;
      unknown += static_cast<uint64_t>(std::count(ids.begin(), ids.begin() + static_cast<ptrdiff_t>(n), unk));
    });
  });
  std::cout << fmt::format("round trip on the training text: {} tokens, {} [UNK]\n", tokens, unknown);
}

void register_vocab_verbs(CLI::App& app, GlobalOptions& options) {
  auto* vocab = app.add_subcommand("vocab", "WordPiece vocabularies");
  vocab->require_subcommand(1);
  auto args = std::make_shared<VocabTrainArguments>();
  auto* train_verb = vocab->add_subcommand("train", "learn a WordPiece vocabulary from text (BERT layout)");
  train_verb->add_option("--input", args->inputs, "text files or directories (recursive)")->required();
  train_verb->add_option("--size", args->size, "vocabulary entries, special tokens included")
      ->capture_default_str()
      ->check(CLI::Range(size_t{105}, size_t{10000000}));
  train_verb->add_option("--output", args->output, "vocab.txt to write")->required();
  train_verb->add_flag("--cased", args->cased, "keep case and accents");
  train_verb->add_option("--min-frequency", args->min_frequency, "stop when no pair occurs this often")
      ->capture_default_str()
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  add_plugin_flags(*train_verb, options);
  train_verb->callback([&options, args] { train(options, *args); });
}

const VerbRegistration registration(&register_vocab_verbs);

}  // namespace
}  // namespace loom::cli
