// Creating a run's components from the recipe; see run_components.hpp.
#include "train/run_components.hpp"

#include <fmt/format.h>

#include "loom/sdk/component_kind.hpp"
#include "loom/sdk/vocabulary_file.hpp"
#include "recipe/errors.hpp"

namespace loom::host {

template <typename Interface>
Component<Interface> create_table_component(const Recipe& recipe, const PluginRegistry& registry,
                                            const std::string& table, const std::string& fallback) {
  const toml::node* selector = recipe.table()[table]["component"].node();
  const bool present = recipe.table().contains(table);
  if (!present && fallback.empty()) return {};
  std::string name = fallback;
  ComponentConfig config{table, "", "", fmt::format("(default {} for the absent [{}])", fallback, table)};
  if (present) {
    if (selector == nullptr || !selector->is_string())
      throw RecipeError(
          fmt::format("{}: {}.component: missing or not a string", recipe.origin(table), table));
    name = *selector->value<std::string>();
    config = recipe.component_config(table);
  }
  const ComponentEntry* entry = registry.find(Interface::kKind, name);
  if (entry == nullptr)
    throw RecipeError(fmt::format("{}: {}.component: no component {}/{} is available",
                                  recipe.origin(table + ".component"), table,
                                  loom::kind_name(Interface::kKind), name));
  return registry.create<Interface>(*entry, config, /*dry_run=*/false);
}

template Component<loom::Backend> create_table_component(const Recipe&, const PluginRegistry&,
                                                         const std::string&, const std::string&);
template Component<loom::Dataset> create_table_component(const Recipe&, const PluginRegistry&,
                                                         const std::string&, const std::string&);

namespace {

// The tokenizer's vocabulary file, for a dataset that checks its data against it (the manifest of
// pre-training shards records the vocabulary they were prepared with).
void hand_vocabulary_file(const Component<loom::Tokenizer>& tokenizer, const Component<loom::Dataset>& data) {
  if (!tokenizer || !data) return;
  const auto* file = tokenizer.find<loom::VocabularyFile>();
  auto* receiver = data.find<loom::DatasetVocabularyFile>();
  if (file == nullptr || receiver == nullptr) return;
  const std::string path =
      tokenizer.call([&](loom::Tokenizer&) { return std::string(file->vocabulary_path()); });
  const std::string sha256 =
      tokenizer.call([&](loom::Tokenizer&) { return std::string(file->vocabulary_sha256()); });
  data.call([&](loom::Dataset&) { receiver->use_vocabulary_file(path.c_str(), sha256.c_str()); });
}

}  // namespace

RunComponents create_run_components(const Recipe& recipe, const PluginRegistry& registry,
                                    const RunComponentNeeds& needs) {
  auto required = [&](const char* table) {
    if (!recipe.table().contains(table))
      throw RecipeError(
          fmt::format("{}: the recipe has no [{}] table, which this command needs", recipe.path(), table));
  };
  required("backend");
  if (needs.data) required("data");
  if (needs.training) {
    required("optimizer");
    required("schedule");
  }
  RunComponents c;
  c.communicator = create_table_component<loom::Communicator>(recipe, registry, "communicator", "local");
  c.backend = create_table_component<loom::Backend>(recipe, registry, "backend", "");
  c.precision = create_table_component<loom::Precision>(recipe, registry, "precision", "fp32");
  c.tokenizer = create_table_component<loom::Tokenizer>(recipe, registry, "tokenizer", "");
  if (needs.data) c.data = create_table_component<loom::Dataset>(recipe, registry, "data", "");
  c.eval_data = create_table_component<loom::Dataset>(recipe, registry, "eval_data", "");
  hand_vocabulary_file(c.tokenizer, c.data);
  hand_vocabulary_file(c.tokenizer, c.eval_data);
  if (needs.training) {
    c.optimizer = create_table_component<loom::Optimizer>(recipe, registry, "optimizer", "");
    c.schedule = create_table_component<loom::Schedule>(recipe, registry, "schedule", "");
  }
  return c;
}

std::optional<int32_t> mask_token_id(RunComponents& components) {
  if (!components.tokenizer) return std::nullopt;
  return components.tokenizer.call([](loom::Tokenizer& t) { return t.special_token_ids().mask; });
}

}  // namespace loom::host
