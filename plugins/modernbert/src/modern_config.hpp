// ModernConfig: the keys of a Hugging Face ModernBERT config.json beyond loom::ModelConfig's, read
// with ModernBertConfig's defaults, in both spellings published files use: the original
// (`global_attn_every_n_layers`, `global_rope_theta`, `local_rope_theta`) and the newer
// (`layer_types`, `rope_parameters`). Every problem names the file and the key.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/sdk/backend.hpp"
#include "loom/sdk/model_config.hpp"
#include "loom_blocks/config_keys.hpp"

namespace loom_modernbert {

struct ModernConfig {
  double norm_eps = 1e-5;
  bool norm_bias = false, attention_bias = false, mlp_bias = false, classifier_bias = false, decoder_bias = true;
  loom::Gelu hidden_activation = loom::Gelu::erf;      ///< the GeGLU's GELU
  loom::Gelu classifier_activation = loom::Gelu::erf;  ///< the prediction head's GELU
  int64_t local_attention = 128;                       ///< a local layer's window: |i − j| ≤ local_attention / 2
  std::vector<bool> global_layers;                     ///< per layer: full attention (true) or the window
  double global_rope_theta = 160000.0, local_rope_theta = 10000.0;
  float embedding_dropout = 0, attention_dropout = 0, mlp_dropout = 0, classifier_dropout = 0;
  bool mean_pooling = false;  ///< classifier_pooling "mean" (else "cls")
};

/// Reads and checks the ModernBERT keys of `file` for a model of `shared`'s sizes.
ModernConfig read_modern_config(const loom_blocks::ConfigKeys& file, const loom::ModelConfig& shared);

}  // namespace loom_modernbert
