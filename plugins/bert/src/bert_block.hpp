// BertBlock: what every BERT or RoBERTa block shares beyond loom_blocks::BlockBase — the config
// checks of its family (family.hpp) and its GELU. Each concrete block is one file (embeddings.cpp, ...).
#pragma once

#include <string>

#include "family.hpp"
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
  BertBlock(const Family& family, const char* kind) : BlockBase(family.block_name(kind)), family_(family) {}

  /// Config values every block relies on; throws ConfigError naming the key.
  void check_config() override {
    check_bert_config();
    // Keys of the whole file that would make it another network than BERT's: refused rather than
    // run a different model than the checkpoint's author trained.
    const loom_blocks::ConfigKeys file(config_json_, config_source_, name_);
    const std::string expected = family_.model_type;
    if (file.has("model_type") && file.text("model_type", expected) != expected)
      file.refuse("model_type", "expected \"" + expected + "\", got \"" + file.text("model_type", "") +
                                    "\" (a config of another family needs that family's blocks)");
    // A config without model_type is BERT's to the host (host/model/model_family.hpp), and
    // RoBERTa's positions follow pad_token_id, which Hugging Face defaults to 1 and the host to 0:
    // RoBERTa's blocks take neither from a default (a host before SDK 0.4 hands no file).
    if (family_.positions_after_padding_id && config_json_ != nullptr) {
      if (!file.has("model_type"))
        file.refuse("model_type", "missing; RoBERTa's blocks need \"" + expected + "\"");
      if (!file.has("pad_token_id"))
        file.refuse("pad_token_id", "missing; RoBERTa's positions start after the padding id, so it must be stated");
    }
    if (file.has("position_embedding_type") && file.text("position_embedding_type", "absolute") != "absolute")
      file.refuse("position_embedding_type",
                  "only \"absolute\" is supported, got \"" + file.text("position_embedding_type", "") + "\"");
  }
  void check_bert_config() const {
    check_shared_sizes();
    check_positive(config_.max_position_embeddings, "max_position_embeddings");
    check_positive(config_.type_vocab_size, "type_vocab_size");
    if (family_.positions_after_padding_id &&
        (config_.pad_token_id < 0 || config_.pad_token_id + 1 >= config_.max_position_embeddings))
      throw loom::ConfigError(name_ + ": model config pad_token_id = " + std::to_string(config_.pad_token_id) +
                              " leaves no position: RoBERTa's positions run from pad_token_id + 1 to "
                              "max_position_embeddings - 1 = " +
                              std::to_string(config_.max_position_embeddings - 1));
    auto probability = [&](float p, const char* key) {
      if (!(p >= 0.0f && p < 1.0f))
        throw loom::ConfigError(name_ + ": model config " + key + " = " + std::to_string(p) +
                                " must be in [0, 1)");
    };
    probability(config_.hidden_dropout_prob, "hidden_dropout_prob");
    probability(config_.attention_probs_dropout_prob, "attention_probs_dropout_prob");
    probability(config_.classifier_dropout, "classifier_dropout");
  }

  const Family& family_;

  loom::Gelu gelu() const {
    return config_.hidden_act == loom::GeluKind::tanh ? loom::Gelu::tanh : loom::Gelu::erf;
  }
};

}  // namespace loom_bert
