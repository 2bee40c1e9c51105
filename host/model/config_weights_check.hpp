// A checkpoint's config.json against its weights, both ways. The model is built from the config
// and the weights are then matched by name, so a config claiming fewer encoder layers than the
// weights hold would leave the extra layers unused — `loom predict` would silently run a shallower
// network — and one claiming more would be reported only as missing parameters. Every size the
// weights' shapes determine is compared with the config's key before anything is built.
#pragma once

#include <string>

#include "checkpoint/safetensors.hpp"
#include "model/bert_config.hpp"

namespace loom::host {

/// Checks `config` (read from `config_path`) against the tensors of `weights`: vocab_size,
/// hidden_size, max_position_embeddings, type_vocab_size, intermediate_size, num_hidden_layers
/// (the encoder layers in the weights must be exactly 0 … num_hidden_layers − 1) and, when the
/// config names its classes (num_labels or id2label), the classifier's rows. Names with or without
/// the `bert.` prefix count alike. Throws BertConfigError naming both files and every mismatch,
/// each with its key.
void check_config_matches_weights(const BertConfig& config, const std::string& config_path,
                                  const SafetensorsFile& weights);

}  // namespace loom::host
