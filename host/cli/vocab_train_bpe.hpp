// `loom vocab train --kind bpe`: learns a byte-level BPE (host/prep/bpe_trainer.cpp) and writes a
// Hugging Face tokenizer.json (host/prep/bpe_tokenizer_json.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cli_context.hpp"

namespace loom::cli {

struct BpeVocabArguments {
  std::vector<std::string> inputs;
  size_t size = 30000;
  std::string output;  ///< tokenizer.json
  uint64_t min_frequency = 2;
  bool add_prefix_space = false;
};

void train_bpe_vocabulary(const GlobalOptions& options, const BpeVocabArguments& args);

}  // namespace loom::cli
