// BertConfig: the Hugging Face `config.json` of a BERT model as a plain struct (docs/checkpoints.md).
//
// The keys every BERT-family config shares (loom::ModelConfig's) are read with BertConfig's defaults
// (so Google's original bert_config.json, which lacks layer_norm_eps, loads); every other key
// (architectures, model_type, pad_token_id, num_labels, a family's own keys) is kept verbatim in
// `extra`, and the file is written back with only the keys it had (plus those the run sets). The
// host reads no family-specific key: blocks read theirs from the whole file
// (BlockSetup::config_json). A value of the wrong type or out of range throws BertConfigError
// naming the file and the key. Writing is atomic (temporary file, fsync, rename).
#pragma once

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace loom::host {

/// A config.json is unreadable or has a bad value; the message names file and key.
class BertConfigError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Which GELU `hidden_act` selects: "gelu" = exact erf form; "gelu_new", "gelu_pytorch_tanh" and
/// "gelu_fast" = tanh approximation.
enum class GeluVariant { kErf, kTanh };

struct BertConfig {
  std::int64_t vocab_size = 30522;  ///< as in the checkpoint (Loom pads internally, never on disk)
  std::int64_t hidden_size = 768;
  std::int64_t num_hidden_layers = 12;
  std::int64_t num_attention_heads = 12;  ///< must divide hidden_size
  std::int64_t intermediate_size = 3072;
  std::string hidden_act = "gelu";
  double hidden_dropout_prob = 0.1;
  double attention_probs_dropout_prob = 0.1;
  std::int64_t max_position_embeddings = 512;
  std::int64_t type_vocab_size = 2;
  double initializer_range = 0.02;
  double layer_norm_eps = 1e-12;
  /// Every other key of the file, kept for round trips (an object; empty = none).
  nlohmann::json extra = nlohmann::json::object();
  /// Keys above the file did not have (they hold their defaults): not written back, so a config of
  /// a family whose file lacks them round-trips unchanged.
  std::vector<std::string> absent_keys;

  /// The GELU form `hidden_act` names (validated on read, so this does not throw for a read config).
  GeluVariant gelu_variant() const;
  /// hidden_size / num_attention_heads.
  std::int64_t head_dim() const { return hidden_size / num_attention_heads; }
};

/// Converts a parsed JSON object; `source` (a file name) prefixes every error.
BertConfig bert_config_from_json(const nlohmann::json& json, const std::string& source);
/// The JSON object of a config: known keys plus `extra` (extra never overrides a known key).
nlohmann::json bert_config_to_json(const BertConfig& config);
/// Reads and validates a config.json; throws BertConfigError ("<file>: <key>: <problem>").
BertConfig read_bert_config(const std::filesystem::path& path);
/// Writes config.json atomically, indented like Hugging Face's save_pretrained.
void write_bert_config(const BertConfig& config, const std::filesystem::path& path);

}  // namespace loom::host
