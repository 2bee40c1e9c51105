// BertConfig → loom::ModelConfig; see model_config_from_bert.hpp.
#include "model/model_config_from_bert.hpp"

#include <limits>

#include <fmt/format.h>

namespace loom::host {
namespace {

int32_t narrow_int(int64_t value, const char* key, const std::string& source) {
  if (value < 0 || value > std::numeric_limits<int32_t>::max())
    throw BertConfigError(fmt::format("{}: {}: {} does not fit a 32-bit size", source, key, value));
  return static_cast<int32_t>(value);
}

}  // namespace

loom::ModelConfig to_model_config(const BertConfig& config, const std::string& source) {
  loom::ModelConfig out = loom::default_model_config();
  out.vocab_size = narrow_int(config.vocab_size, "vocab_size", source);
  out.hidden_size = narrow_int(config.hidden_size, "hidden_size", source);
  out.num_hidden_layers = narrow_int(config.num_hidden_layers, "num_hidden_layers", source);
  out.num_attention_heads = narrow_int(config.num_attention_heads, "num_attention_heads", source);
  out.intermediate_size = narrow_int(config.intermediate_size, "intermediate_size", source);
  out.hidden_act = config.gelu_variant() == GeluVariant::kTanh ? loom::GeluKind::tanh : loom::GeluKind::erf;
  out.hidden_dropout_prob = static_cast<float>(config.hidden_dropout_prob);
  out.attention_probs_dropout_prob = static_cast<float>(config.attention_probs_dropout_prob);
  out.max_position_embeddings = narrow_int(config.max_position_embeddings, "max_position_embeddings", source);
  out.type_vocab_size = narrow_int(config.type_vocab_size, "type_vocab_size", source);
  out.initializer_range = static_cast<float>(config.initializer_range);
  out.layer_norm_eps = static_cast<float>(config.layer_norm_eps);

  const nlohmann::json& extra = config.extra;
  out.num_labels = 2;
  if (extra.contains("num_labels") && extra["num_labels"].is_number_integer())
    out.num_labels = narrow_int(extra["num_labels"].get<int64_t>(), "num_labels", source);
  else if (extra.contains("id2label") && extra["id2label"].is_object() && !extra["id2label"].empty())
    out.num_labels = narrow_int(static_cast<int64_t>(extra["id2label"].size()), "id2label", source);
  out.classifier_dropout = out.hidden_dropout_prob;
  if (extra.contains("classifier_dropout") && extra["classifier_dropout"].is_number()) {
    const double p = extra["classifier_dropout"].get<double>();
    if (!(p >= 0.0 && p < 1.0))
      throw BertConfigError(fmt::format("{}: classifier_dropout: {} must be in [0, 1) or null", source, p));
    out.classifier_dropout = static_cast<float>(p);
  }
  if (extra.contains("pad_token_id") && extra["pad_token_id"].is_number_integer())
    out.pad_token_id = narrow_int(extra["pad_token_id"].get<int64_t>(), "pad_token_id", source);
  return out;
}

}  // namespace loom::host
