// The SDK's ModelConfig (what blocks read) from a parsed Hugging Face config.json.
#pragma once

#include "model/bert_config.hpp"
#include "loom/sdk/model_config.hpp"

namespace loom::host {

/// Converts a validated BertConfig. `num_labels` comes from the file's `num_labels` or the size of
/// `id2label` (default 2); `classifier_dropout` from the file, or hidden_dropout_prob when null or
/// absent (Hugging Face semantics). Throws BertConfigError naming `source` for values that do not
/// fit (e.g. sizes beyond int32).
loom::ModelConfig to_model_config(const BertConfig& config, const std::string& source);

}  // namespace loom::host
