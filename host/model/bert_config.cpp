// Hugging Face BertConfig JSON ↔ BertConfig (contract in bert_config.hpp).
#include "model/bert_config.hpp"

#include <fstream>
#include <sstream>

#include "files/atomic_file.hpp"
#include "loom_json/json_problem.hpp"

namespace loom::host {
namespace {

[[noreturn]] void refuse(const std::string& source, const std::string& key, const std::string& problem) {
  throw BertConfigError(source + ": " + key + ": " + problem);
}

void read_integer(const nlohmann::json& json, const std::string& source, const char* key,
                  std::int64_t minimum, std::int64_t& out) {
  if (!json.contains(key)) return;
  const auto& value = json[key];
  if (!value.is_number_integer()) refuse(source, key, "expected an integer, got " + value.dump());
  const std::int64_t number = value.get<std::int64_t>();
  if (number < minimum)
    refuse(source, key, "must be at least " + std::to_string(minimum) + ", got " + value.dump());
  out = number;
}

void read_real(const nlohmann::json& json, const std::string& source, const char* key, double minimum,
               double below, double& out) {
  if (!json.contains(key)) return;
  const auto& value = json[key];
  if (!value.is_number()) refuse(source, key, "expected a number, got " + value.dump());
  const double number = value.get<double>();
  if (!(number >= minimum && number < below)) {
    std::ostringstream range;
    range << "must be in [" << minimum << ", " << below << "), got " << value.dump();
    refuse(source, key, range.str());
  }
  out = number;
}

bool parse_gelu_variant(const std::string& hidden_act, GeluVariant& variant) {
  if (hidden_act == "gelu") {
    variant = GeluVariant::kErf;
    return true;
  }
  if (hidden_act == "gelu_new" || hidden_act == "gelu_pytorch_tanh" || hidden_act == "gelu_fast") {
    variant = GeluVariant::kTanh;
    return true;
  }
  return false;
}

const char* const kKnownKeys[] = {"vocab_size",
                                  "hidden_size",
                                  "num_hidden_layers",
                                  "num_attention_heads",
                                  "intermediate_size",
                                  "hidden_act",
                                  "hidden_dropout_prob",
                                  "attention_probs_dropout_prob",
                                  "max_position_embeddings",
                                  "type_vocab_size",
                                  "initializer_range",
                                  "layer_norm_eps"};

}  // namespace

GeluVariant BertConfig::gelu_variant() const {
  GeluVariant variant;
  if (!parse_gelu_variant(hidden_act, variant))
    throw BertConfigError(
        "hidden_act: unsupported activation \"" + hidden_act +
        "\" (Loom supports \"gelu\" (erf), \"gelu_new\", \"gelu_pytorch_tanh\", \"gelu_fast\" (tanh))");
  return variant;
}

BertConfig bert_config_from_json(const nlohmann::json& json, const std::string& source) {
  if (!json.is_object())
    throw BertConfigError(source + ": expected a JSON object (a Hugging Face BertConfig)");
  BertConfig config;
  read_integer(json, source, "vocab_size", 1, config.vocab_size);
  read_integer(json, source, "hidden_size", 1, config.hidden_size);
  read_integer(json, source, "num_hidden_layers", 0, config.num_hidden_layers);
  read_integer(json, source, "num_attention_heads", 1, config.num_attention_heads);
  read_integer(json, source, "intermediate_size", 1, config.intermediate_size);
  read_integer(json, source, "max_position_embeddings", 1, config.max_position_embeddings);
  read_integer(json, source, "type_vocab_size", 1, config.type_vocab_size);
  read_real(json, source, "hidden_dropout_prob", 0.0, 1.0, config.hidden_dropout_prob);
  read_real(json, source, "attention_probs_dropout_prob", 0.0, 1.0, config.attention_probs_dropout_prob);
  read_real(json, source, "initializer_range", 0.0, 1e300, config.initializer_range);
  read_real(json, source, "layer_norm_eps", 0.0, 1.0, config.layer_norm_eps);
  if (json.contains("layer_norm_eps") && config.layer_norm_eps <= 0.0)
    refuse(source, "layer_norm_eps", "must be positive");
  if (json.contains("hidden_act")) {
    const auto& value = json["hidden_act"];
    if (!value.is_string()) refuse(source, "hidden_act", "expected a string, got " + value.dump());
    config.hidden_act = value.get<std::string>();
  }
  GeluVariant variant;
  if (!parse_gelu_variant(config.hidden_act, variant))
    refuse(source, "hidden_act",
           "unsupported activation \"" + config.hidden_act +
               "\"; use \"gelu\" (erf) or \"gelu_new\" / \"gelu_pytorch_tanh\" / \"gelu_fast\" (tanh)");
  if (config.hidden_size % config.num_attention_heads != 0)
    refuse(source, "num_attention_heads",
           std::to_string(config.num_attention_heads) + " heads do not divide hidden_size " +
               std::to_string(config.hidden_size));

  for (const auto& [key, value] : json.items()) {
    bool known = false;
    for (const char* name : kKnownKeys) known = known || key == name;
    if (!known) config.extra[key] = value;
  }
  // Keys a family does not implement (BERT's position_embedding_type, a model_type it is not) are
  // refused by that family's blocks, which read the whole file (BlockSetup::config_json).
  for (const char* name : kKnownKeys)
    if (!json.contains(name)) config.absent_keys.emplace_back(name);
  return config;
}

nlohmann::json bert_config_to_json(const BertConfig& config) {
  nlohmann::json json = config.extra.is_object() ? config.extra : nlohmann::json::object();
  json["vocab_size"] = config.vocab_size;
  json["hidden_size"] = config.hidden_size;
  json["num_hidden_layers"] = config.num_hidden_layers;
  json["num_attention_heads"] = config.num_attention_heads;
  json["intermediate_size"] = config.intermediate_size;
  json["hidden_act"] = config.hidden_act;
  json["hidden_dropout_prob"] = config.hidden_dropout_prob;
  json["attention_probs_dropout_prob"] = config.attention_probs_dropout_prob;
  json["max_position_embeddings"] = config.max_position_embeddings;
  json["type_vocab_size"] = config.type_vocab_size;
  json["initializer_range"] = config.initializer_range;
  json["layer_norm_eps"] = config.layer_norm_eps;
  // A key the file did not have is not added: another family's config (one without
  // hidden_act or type_vocab_size) stays that family's config.
  for (const std::string& key : config.absent_keys) json.erase(key);
  return json;
}

BertConfig read_bert_config(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in)
    throw BertConfigError(path.string() + ": cannot open the model config (a Hugging Face config.json)");
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& error) {
    throw BertConfigError(path.string() + ": not valid JSON" + loom_json::json_parse_problem(error));
  }
  return bert_config_from_json(json, path.string());
}

void write_bert_config(const BertConfig& config, const std::filesystem::path& path) {
  write_file_atomically(path, bert_config_to_json(config).dump(2) + "\n");
}

}  // namespace loom::host
