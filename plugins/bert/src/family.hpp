// Family: what tells BERT's blocks from RoBERTa's. The two networks are the same post-LN encoder;
// RoBERTa (Liu et al., 2019, as Hugging Face's RobertaModel) names its parameters `roberta.*`,
// numbers positions from pad_token_id + 1 (position ids follow the padding id, so a real token at
// column t has position pad_token_id + 1 + t), has one token type, and ends in other heads
// (roberta_lm_head.cpp, roberta_classifier_head.cpp). Blocks shared by both families are templates
// on the family, so each family is its own set of components (`bert.*`, `roberta.*`) of one plugin
// (docs/decisions/roberta-blocks.md).
#pragma once

#include <string>

namespace loom_bert {

struct Family {
  const char* model_type;        ///< the config's model_type, and the first part of the block names
  const char* embeddings_scope;  ///< the embeddings' parameter scope
  const char* layer_scope;       ///< an encoder layer's parameter scope ('#': the layer's number)
  const char* word_embeddings;   ///< the full name of the word embedding matrix (tied decoders' target)
  const char* span_architecture;  ///< the Hugging Face class a span head ends
  /// RoBERTa: positions start after the padding id, and a config must state pad_token_id and
  /// model_type (Hugging Face's RobertaConfig defaults pad_token_id to 1, Loom's host to 0).
  bool positions_after_padding_id;

  /// "block/<model_type>.<kind>", the name a block gives in messages.
  std::string block_name(const char* kind) const { return std::string("block/") + model_type + "." + kind; }
  /// "<model_type>.<kind>", the component's name.
  std::string component_name(const char* kind) const { return std::string(model_type) + "." + kind; }
};

inline constexpr Family kBert{"bert", "bert.embeddings", "bert.encoder.layer.#",
                              "bert.embeddings.word_embeddings.weight", "BertForQuestionAnswering", false};
inline constexpr Family kRoberta{"roberta", "roberta.embeddings", "roberta.encoder.layer.#",
                                 "roberta.embeddings.word_embeddings.weight", "RobertaForQuestionAnswering", true};

}  // namespace loom_bert
