// Everything a byte-level BPE tokenizer is made of, as read from a Hugging Face tokenizer.json
// (tokenizer_json.cpp) or from GPT-2's vocab.json + merges.txt (gpt2_files.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "added_tokens.hpp"
#include "bpe_model.hpp"
#include "normalizer.hpp"

namespace loom::bpe {

/// The ByteLevel pre-tokenizer's settings.
struct ByteLevelSettings {
  bool add_prefix_space = false;  ///< a space before every text stretch not starting with one
  bool use_regex = true;          ///< split with GPT-2's pattern (gpt2_split.hpp)
};

/// One element of a post-processing template: a sequence (A or B) or special token ids.
struct TemplatePiece {
  int32_t sequence = -1;  ///< 0: A, 1: B, -1: the special ids below
  std::vector<int32_t> ids;
  int32_t type_id = 0;
};

/// The post-processor: offset trimming (ByteLevel, RobertaProcessing) and the template of special
/// tokens around one or two sequences (RobertaProcessing, TemplateProcessing).
struct PostProcessorSettings {
  bool trim_offsets = false;
  bool trim_keeps_prefix_space = false;  ///< the processor's add_prefix_space (see post_processor.hpp)
  bool has_template = false;
  std::vector<TemplatePiece> single;
  std::vector<TemplatePiece> pair;
};

struct BpeConfig {
  std::string source;  ///< the file(s), for messages
  TokenIds vocabulary;
  std::vector<std::pair<std::string, std::string>> merges;
  BpeModelOptions model;
  std::vector<AddedToken> added_tokens;
  std::vector<NormalizerStep> normalizer;
  ByteLevelSettings pre_tokenizer;
  PostProcessorSettings post_processor;
};

}  // namespace loom::bpe
