// The [model] table; see model_recipe.hpp.
#include "model/model_recipe.hpp"

#include <filesystem>
#include <fstream>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/bert_config.hpp"
#include "recipe/errors.hpp"
#include "loom/sdk/options.hpp"

namespace fs = std::filesystem;

namespace loom::host {
namespace {

// "file:line:col" of a node inside the recipe, falling back to the key's origin.
std::string where(const Recipe& recipe, const toml::node& node, const std::string& fallback_key) {
  const toml::source_region& source = node.source();
  if (source.begin.line == 0 || !source.path) return recipe.origin(fallback_key);
  return fmt::format("{}:{}:{}", *source.path, source.begin.line, source.begin.column);
}

// The config file named by model.config, or "" with a problem recorded.
std::string find_config(const Recipe& recipe, std::vector<std::string>& problems) {
  const toml::node* node = recipe.table()["model"]["config"].node();
  if (node == nullptr || !node->is_string()) {
    problems.push_back(
        fmt::format("{}: model.config: {} (the Hugging Face config.json of the model, e.g. "
                    "\"configs/models/bert-base.json\")",
                    recipe.origin(node == nullptr ? "model" : "model.config"),
                    node == nullptr ? "missing required key" : "expected a string"));
    return "";
  }
  const fs::path given = *node->value<std::string>();
  std::vector<fs::path> candidates;
  if (given.is_absolute()) {
    candidates.push_back(given);
  } else {
    candidates.push_back(fs::path(recipe.directory()) / given);
    candidates.push_back(fs::current_path() / given);
  }
  std::error_code error;
  for (const auto& candidate : candidates)
    if (fs::is_regular_file(candidate, error)) return candidate.lexically_normal().string();
  std::string tried;
  for (const auto& candidate : candidates)
    tried += (tried.empty() ? "" : ", ") + candidate.lexically_normal().string();
  problems.push_back(
      fmt::format("{}: model.config: file not found (tried {})", recipe.origin("model.config"), tried));
  return "";
}

// The raw config JSON (for `repeat` keys), validating it as a BertConfig on the way.
nlohmann::json load_config_json(const std::string& path, const Recipe& recipe,
                                std::vector<std::string>& problems) {
  try {
    read_bert_config(path);
    std::ifstream in(path);
    return nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    problems.push_back(fmt::format("{}: model.config: {}", recipe.origin("model.config"), e.what()));
  }
  return nlohmann::json();
}

int64_t resolve_repeat(const toml::node& repeat, const nlohmann::json& config, const std::string& origin,
                       std::vector<std::string>& problems) {
  if (auto count = repeat.value_exact<int64_t>()) {
    if (*count >= 1) return *count;
    problems.push_back(fmt::format("{}: model.blocks: repeat = {} must be at least 1", origin, *count));
    return 0;
  }
  if (auto key = repeat.value_exact<std::string>()) {
    if (config.is_null()) return 0;  // the config's own problem is already reported
    if (!config.contains(*key) || !config[*key].is_number_integer()) {
      std::vector<std::string> integer_keys;
      for (const auto& [k, v] : config.items())
        if (v.is_number_integer()) integer_keys.push_back(k);
      problems.push_back(
          fmt::format("{}: model.blocks: repeat = \"{}\" is not an integer key of the model config{}", origin,
                      *key, loom::Options::suggestion(*key, integer_keys)));
      return 0;
    }
    const int64_t count = config[*key].get<int64_t>();
    if (count >= 1) return count;
    problems.push_back(fmt::format(
        "{}: model.blocks: repeat = \"{}\" is {} in the config; it must be at least 1", origin, *key, count));
    return 0;
  }
  problems.push_back(
      fmt::format("{}: model.blocks: repeat must be an integer or a config key such as "
                  "\"num_hidden_layers\"",
                  origin));
  return 0;
}

ModelRecipe read(const Recipe& recipe, std::vector<std::string>& problems) {
  ModelRecipe model;
  if (recipe.table()["model"].as_table() == nullptr) {
    problems.push_back(
        fmt::format("{}: [model]: missing table (config and blocks of the model)", recipe.path()));
    return model;
  }
  model.config_path = find_config(recipe, problems);
  const nlohmann::json config =
      model.config_path.empty() ? nlohmann::json() : load_config_json(model.config_path, recipe, problems);

  const toml::array* blocks = recipe.table()["model"]["blocks"].as_array();
  if (blocks == nullptr || blocks->empty()) {
    problems.push_back(fmt::format(
        "{}: model.blocks: {} (e.g. [\"bert.embeddings\", {{ block = \"bert.encoder-layer\", repeat = "
        "\"num_hidden_layers\" }}, \"bert.pretraining-heads\"])",
        recipe.origin(blocks == nullptr ? "model" : "model.blocks"),
        recipe.table()["model"]["blocks"] ? "expected a non-empty array" : "missing required key"));
    return model;
  }
  for (const toml::node& entry : *blocks) {
    const std::string origin = where(recipe, entry, "model.blocks");
    BlockUse use;
    use.origin = origin;
    if (auto name = entry.value_exact<std::string>()) {
      use.component = *name;
    } else if (const toml::table* table = entry.as_table()) {
      for (const auto& [key, value] : *table)
        if (key.str() != "block" && key.str() != "repeat")
          problems.push_back(fmt::format("{}: model.blocks: unknown key '{}' in a block entry{}",
                                         where(recipe, value, "model.blocks"), key.str(),
                                         loom::Options::suggestion(key.str(), {"block", "repeat"})));
      if (auto name = (*table)["block"].value_exact<std::string>())
        use.component = *name;
      else
        problems.push_back(fmt::format("{}: model.blocks: an entry table needs block = \"name\"", origin));
      if (const toml::node* repeat = table->get("repeat"))
        use.repeat = resolve_repeat(*repeat, config, origin, problems);
    } else {
      problems.push_back(fmt::format(
          "{}: model.blocks: each entry is a block name or {{ block = \"...\", repeat = ... }}", origin));
      continue;
    }
    if (!use.component.empty()) model.blocks.push_back(use);
  }
  return model;
}

// A dataset's max_seq_length beyond the model's positions fails only when a row that long comes
// (an evaluation at the end of a run, a long question): refused here, before anything runs.
void check_sequence_lengths(const Recipe& recipe, const std::string& config_path,
                            std::vector<std::string>& problems) {
  int64_t positions = 0;
  try {
    positions = read_bert_config(config_path).max_position_embeddings;
  } catch (const std::exception&) {
    return;  // load_config_json reported it
  }
  for (const char* table : {"data", "eval_data"}) {
    const std::string key = std::string(table) + ".max_seq_length";
    const std::optional<int64_t> length = recipe.table()[table]["max_seq_length"].value_exact<int64_t>();
    if (!length || *length <= positions) continue;
    problems.push_back(fmt::format(
        "{}: {}: {} is longer than the model's max_position_embeddings = {} ({}); use at most {}, or a "
        "model with more positions",
        recipe.origin(key), key, *length, positions, config_path, positions));
  }
}

}  // namespace

std::vector<std::string> ModelRecipe::expanded_blocks() const {
  std::vector<std::string> names;
  for (const auto& use : blocks)
    for (int64_t i = 0; i < use.repeat; ++i) names.push_back(use.component);
  return names;
}

ModelRecipe read_model_recipe(const Recipe& recipe) {
  std::vector<std::string> problems;
  ModelRecipe model = read(recipe, problems);
  if (!problems.empty()) throw RecipeError(problems);
  return model;
}

std::vector<std::string> check_model_recipe(const Recipe& recipe, const PluginRegistry& registry) {
  std::vector<std::string> problems;
  const ModelRecipe model = read(recipe, problems);
  if (!model.config_path.empty() && problems.empty())
    check_sequence_lengths(recipe, model.config_path, problems);
  for (const auto& use : model.blocks) {
    const ComponentEntry* entry = nullptr;
    try {
      entry = registry.find(LOOM_KIND_BLOCK, use.component);
    } catch (const PluginLoadError& e) {
      problems.push_back(fmt::format("{}: model.blocks: {}", use.origin, e.reason()));
      continue;
    }
    if (entry != nullptr) continue;
    const std::vector<std::string> available = registry.names_of_kind(LOOM_KIND_BLOCK);
    problems.push_back(
        fmt::format("{}: model.blocks: no component block/{} is available{} (available: {})", use.origin,
                    use.component, loom::Options::suggestion(use.component, available),
                    available.empty() ? "none" : fmt::format("{}", fmt::join(available, ", "))));
  }
  return problems;
}

}  // namespace loom::host
