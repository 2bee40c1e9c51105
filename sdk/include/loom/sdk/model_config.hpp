// ModelConfig: the BERT hyper-parameters every model block reads, in C-compatible form.
//
// The host fills it from a Hugging Face `config.json` (BertConfig keys, same names) and hands the
// same object to every block of the model. Values are the file's, unchanged: `vocab_size` is the
// tokenizer's size (30522) and every parameter has its Hugging Face shape; only activations use
// `padded_vocab_size` (docs/decisions/vocab-padding.md). Plain data, no pointers: it may be copied
// freely across the plugin boundary.
#pragma once

#include <cstdint>

#include "loom/sdk/version.hpp"

LOOM_SDK_NAMESPACE_BEGIN

/// Which GELU `hidden_act` names (docs/reference.md §2.9).
enum class GeluKind : int32_t {
  erf = 0,   ///< "gelu": x·Φ(x) with the exact error function (Google/Hugging Face BERT)
  tanh = 1,  ///< "gelu_new" / "gelu_pytorch_tanh": the tanh approximation
};

/// Hugging Face BertConfig fields a BERT model needs. Field names follow config.json.
struct ModelConfig {
  int32_t vocab_size;                 ///< token ids lie in [0, vocab_size)
  int32_t hidden_size;                ///< H
  int32_t num_hidden_layers;          ///< encoder layers (`repeat = "num_hidden_layers"`)
  int32_t num_attention_heads;        ///< heads; H must be a multiple of it
  int32_t intermediate_size;          ///< FFN width I
  GeluKind hidden_act;                ///< GELU variant of the FFN and the MLM transform
  float hidden_dropout_prob;          ///< dropout after embeddings, attention output and FFN
  float attention_probs_dropout_prob; ///< dropout on the attention probabilities
  int32_t max_position_embeddings;    ///< rows of the position table (longest sequence)
  int32_t type_vocab_size;            ///< rows of the token-type table (2)
  float initializer_range;            ///< std of the normal initialiser
  float layer_norm_eps;               ///< epsilon of every LayerNorm (1e-12)
  int32_t num_labels;                 ///< classes of a classification head (config `num_labels`/id2label; 2)
  float classifier_dropout;           ///< dropout before the classifier (null in the file → hidden_dropout_prob)
  int32_t pad_token_id;               ///< id of [PAD] (0)
};

/// `vocab_size` rounded up to a multiple of 8: the row stride of MLM logits, so every row starts
/// aligned (NVIDIA pads the same way); columns ≥ vocab_size are never computed or read.
inline int32_t padded_vocab_size(const ModelConfig& config) {
  return (config.vocab_size + 7) / 8 * 8;
}

/// A ModelConfig with BertConfig's defaults (bert-base-uncased).
inline ModelConfig default_model_config() {
  ModelConfig c{};
  c.vocab_size = 30522;
  c.hidden_size = 768;
  c.num_hidden_layers = 12;
  c.num_attention_heads = 12;
  c.intermediate_size = 3072;
  c.hidden_act = GeluKind::erf;
  c.hidden_dropout_prob = 0.1f;
  c.attention_probs_dropout_prob = 0.1f;
  c.max_position_embeddings = 512;
  c.type_vocab_size = 2;
  c.initializer_range = 0.02f;
  c.layer_norm_eps = 1e-12f;
  c.num_labels = 2;
  c.classifier_dropout = 0.1f;
  c.pad_token_id = 0;
  return c;
}

LOOM_SDK_NAMESPACE_END
