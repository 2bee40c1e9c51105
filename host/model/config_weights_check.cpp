// config.json against the weights' shapes; see config_weights_check.hpp.
#include "model/config_weights_check.hpp"

#include <set>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace loom::host {
namespace {

// The tensor called `name` below the model's root, with or without the `bert.` prefix.
const SafetensorsTensor* find(const SafetensorsFile& weights, const std::string& name) {
  const SafetensorsTensor* tensor = weights.find("bert." + name);
  return tensor != nullptr ? tensor : weights.find(name);
}

// The encoder layer a tensor belongs to (`[bert.]encoder.layer.<k>.…`), or -1.
long layer_of(std::string_view name) {
  if (name.substr(0, 5) == "bert.") name.remove_prefix(5);
  constexpr std::string_view kMarker = "encoder.layer.";
  if (name.substr(0, kMarker.size()) != kMarker) return -1;
  name.remove_prefix(kMarker.size());
  const size_t dot = name.find('.');
  if (dot == 0 || dot == std::string_view::npos || dot > 6) return -1;
  long layer = 0;
  for (char c : name.substr(0, dot)) {
    if (c < '0' || c > '9') return -1;
    layer = layer * 10 + (c - '0');
  }
  return layer;
}

std::string layer_list(const std::set<long>& layers) {
  if (layers.empty()) return "none";
  const bool contiguous = *layers.rbegin() - *layers.begin() + 1 == static_cast<long>(layers.size());
  if (contiguous)
    return layers.size() == 1 ? std::to_string(*layers.begin())
                              : fmt::format("{}–{}", *layers.begin(), *layers.rbegin());
  std::string out;
  for (long layer : layers) out += (out.empty() ? "" : ", ") + std::to_string(layer);
  return out;
}

}  // namespace

void check_config_matches_weights(const BertConfig& config, const std::string& config_path,
                                  const SafetensorsFile& weights) {
  std::vector<std::string> problems;
  // One dimension of a tensor against a config key.
  const auto compare = [&](const std::string& name, size_t dimension, int64_t expected, const char* key) {
    const SafetensorsTensor* tensor = find(weights, name);
    if (tensor == nullptr || tensor->shape.size() <= dimension) return;
    const int64_t actual = tensor->shape[dimension];
    if (actual != expected)
      problems.push_back(fmt::format("{} = {}, but {} has {} there (shape [{}])", key, expected, tensor->name,
                                     actual, fmt::join(tensor->shape, ", ")));
  };
  compare("embeddings.word_embeddings.weight", 0, config.vocab_size, "vocab_size");
  compare("embeddings.word_embeddings.weight", 1, config.hidden_size, "hidden_size");
  compare("embeddings.position_embeddings.weight", 0, config.max_position_embeddings,
          "max_position_embeddings");
  compare("embeddings.token_type_embeddings.weight", 0, config.type_vocab_size, "type_vocab_size");

  std::set<long> layers;
  for (const SafetensorsTensor& tensor : weights.tensors()) {
    const long layer = layer_of(tensor.name);
    if (layer >= 0) layers.insert(layer);
  }
  for (long layer : layers)
    compare(fmt::format("encoder.layer.{}.intermediate.dense.weight", layer), 0, config.intermediate_size,
            "intermediate_size");
  std::set<long> expected;
  for (long layer = 0; layer < config.num_hidden_layers; ++layer) expected.insert(layer);
  if (layers != expected && !layers.empty())
    problems.push_back(fmt::format(
        "num_hidden_layers = {}, but the weights hold encoder layer{} {} ({} layer{}): {}",
        config.num_hidden_layers, layers.size() == 1 ? "" : "s", layer_list(layers), layers.size(),
        layers.size() == 1 ? "" : "s",
        *layers.rbegin() >= config.num_hidden_layers ? "a model built from this config would leave the extra "
                                                       "layers out"
                                                     : "the config asks for layers the weights do not have"));

  const nlohmann::json& extra = config.extra;
  int64_t labels = 0;
  if (extra.contains("num_labels") && extra["num_labels"].is_number_integer())
    labels = extra["num_labels"].get<int64_t>();
  else if (extra.contains("id2label") && extra["id2label"].is_object())
    labels = static_cast<int64_t>(extra["id2label"].size());
  if (labels > 0 && weights.find("classifier.weight") != nullptr)
    compare("classifier.weight", 0, labels,
            extra.contains("num_labels") ? "num_labels" : "the classes of id2label");

  if (problems.empty()) return;
  std::string message = fmt::format("{} does not describe the weights in {} ({} problem{}):", config_path,
                                    weights.source(), problems.size(), problems.size() == 1 ? "" : "s");
  for (const auto& problem : problems) message += "\n  " + problem;
  message += "\nuse the config.json saved with these weights, or correct the keys above";
  throw BertConfigError(message);
}

}  // namespace loom::host
