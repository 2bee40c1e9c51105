// BertBlock: what every BERT block shares beyond loom_blocks::BlockBase — BERT's config checks
// and its GELU. Each concrete block is one file (embeddings.cpp, ...).
#pragma once

#include <string>

#include "loom_blocks/block_base.hpp"
#include "loom_blocks/config_keys.hpp"
#include "loom_blocks/parameter_list.hpp"
#include "loom_blocks/region_carver.hpp"

namespace loom_bert {

using loom_blocks::kDropoutSiteShift;
using loom_blocks::mix64;
using loom_blocks::ParameterList;
using loom_blocks::RegionCarver;

class BertBlock : public loom_blocks::BlockBase {
 protected:
  explicit BertBlock(std::string name) : BlockBase(std::move(name)) {}

  /// Config values every block relies on; throws ConfigError naming the key.
  void check_config() override {
    check_bert_config();
    // Keys of the whole file that would make it another network than BERT's: refused rather than
    // run a different model than the checkpoint's author trained.
    const loom_blocks::ConfigKeys file(config_json_, config_source_, name_);
    if (file.has("model_type") && file.text("model_type", "bert") != "bert")
      file.refuse("model_type", "expected \"bert\", got \"" + file.text("model_type", "") +
                                    "\" (a config of another family needs that family's blocks)");
    if (file.has("position_embedding_type") && file.text("position_embedding_type", "absolute") != "absolute")
      file.refuse("position_embedding_type",
                  "only \"absolute\" is supported, got \"" + file.text("position_embedding_type", "") + "\"");
  }
  void check_bert_config() const {
    check_shared_sizes();
    check_positive(config_.max_position_embeddings, "max_position_embeddings");
    check_positive(config_.type_vocab_size, "type_vocab_size");
    auto probability = [&](float p, const char* key) {
      if (!(p >= 0.0f && p < 1.0f))
        throw loom::ConfigError(name_ + ": model config " + key + " = " + std::to_string(p) +
                                " must be in [0, 1)");
    };
    probability(config_.hidden_dropout_prob, "hidden_dropout_prob");
    probability(config_.attention_probs_dropout_prob, "attention_probs_dropout_prob");
    probability(config_.classifier_dropout, "classifier_dropout");
  }

  loom::Gelu gelu() const {
    return config_.hidden_act == loom::GeluKind::tanh ? loom::Gelu::tanh : loom::Gelu::erf;
  }
};

}  // namespace loom_bert
