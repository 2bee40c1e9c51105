// Block lists by family naming convention; see model_family.hpp.
#include "model/model_family.hpp"

#include "model/model_config_from_bert.hpp"

namespace loom::host {

std::string model_family(const BertConfig& config, const std::string& source) {
  if (!config.extra.contains("model_type")) return "bert";
  const nlohmann::json& value = config.extra["model_type"];
  if (!value.is_string() || value.get<std::string>().empty())
    throw BertConfigError(source + ": model_type: expected the family's name as a string, got " + value.dump());
  return value.get<std::string>();
}

std::vector<std::string> family_blocks(const BertConfig& config, const std::string& source, const char* head) {
  const std::string family = model_family(config, source);
  std::vector<std::string> blocks{family + ".embeddings"};
  for (int64_t i = 0; i < config.num_hidden_layers; ++i) blocks.push_back(family + ".encoder-layer");
  blocks.push_back(family + "." + head);
  return blocks;
}

std::unique_ptr<Model> family_model(const PluginRegistry& registry, const std::filesystem::path& config_path,
                                    const char* head, const Component<loom::Backend>& backend,
                                    loom::DType compute_dtype) {
  const std::string source = config_path.string();
  const BertConfig config = read_bert_config(config_path);
  return std::make_unique<Model>(registry, family_blocks(config, source, head), to_model_config(config, source),
                                 backend, compute_dtype, bert_config_to_json(config).dump(), source);
}

}  // namespace loom::host
