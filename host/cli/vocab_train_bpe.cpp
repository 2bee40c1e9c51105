// See vocab_train_bpe.hpp. Words are counted as `tokenizers` counts them when it trains from files:
// each line with its newline is one text, pre-tokenized by tokenizer/bpe built from a tokenizer.json
// with an empty model; the alphabet is GPT-2's 256 byte characters, RoBERTa's special tokens first.
#include "vocab_train_bpe.hpp"

#include <unistd.h>

#include <fstream>
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "files/file_writer.hpp"
#include "prep/bpe_tokenizer_json.hpp"
#include "prep/bpe_trainer.hpp"
#include "recipe/errors.hpp"
#include "vocab_tokenizer.hpp"
#include "vocab_training_inputs.hpp"

namespace loom::cli {

void train_bpe_vocabulary(const GlobalOptions& options, const BpeVocabArguments& args) {
  namespace fs = std::filesystem;
  const std::vector<fs::path> files = vocab_training_files(args.inputs);
  TemporaryFile splitter_file{fs::temp_directory_path() / fmt::format("loom-bpe-splitter-{}.json", ::getpid())};
  {
    std::ofstream out(splitter_file.path);
    out << host::splitter_bpe_tokenizer_json(args.add_prefix_space);
  }
  auto splitter = create_tokenizer_for_vocab(options, splitter_file.path.string(), false, "loom vocab train");
  host::WordCounts counts;
  std::string scratch(1 << 16, '\0');
  uint64_t bytes = 0;
  splitter.call([&](loom::Tokenizer& t) {
    for_each_training_line(files, [&](const std::string& line) {
      host::count_words(t, line + "\n", counts, scratch);
      bytes += line.size() + 1;
    });
  });
  std::cerr << fmt::format("loom vocab train: {} files, {:.1f} MB, {} distinct words\n", files.size(),
                           static_cast<double>(bytes) / 1e6, counts.size());
  if (counts.empty())
    throw host::InputError(fmt::format("--input {}: no words to learn a vocabulary from (the inputs hold no text)",
                                       fmt::join(args.inputs, " ")));
  host::BpeTrainingOptions training;
  training.vocab_size = args.size;
  training.min_frequency = args.min_frequency;
  training.special_tokens = host::roberta_special_tokens();
  training.initial_alphabet = host::byte_level_alphabet();
  const host::BpeTrainingResult trained = host::learn_bpe(counts, training);
  host::FileWriter out(args.output);
  out.write(host::trained_bpe_tokenizer_json(trained, args.add_prefix_space));
  out.commit();
  std::cout << fmt::format("{}: {} entries ({} special, {} alphabet, {} merges)\n", args.output,
                           trained.vocabulary.size(), training.special_tokens.size(), trained.alphabet,
                           trained.merges.size());

  // Round trip: the training text through the new tokenizer.
  auto tokenizer = create_tokenizer_for_vocab(options, args.output, false, "loom vocab train --output");
  uint64_t tokens = 0;
  tokenizer.call([&](loom::Tokenizer& t) {
    std::vector<int32_t> ids;
    for_each_training_line(files, [&](const std::string& line) {
      if (ids.size() < line.size() + 2) ids.resize(line.size() + 2);
      tokens += t.tokenize(line.data(), line.size(), ids.data(), ids.size());
    });
  });
  std::cout << fmt::format("round trip on the training text: {} tokens, {:.2f} bytes per token\n", tokens,
                           tokens > 0 ? static_cast<double>(bytes) / static_cast<double>(tokens) : 0.0);
}

}  // namespace loom::cli
