// RunComponents: every component a run uses, created from the recipe's component tables.
//
// Absent optional tables get their defaults: [communicator] → communicator/local,
// [precision] → precision/fp32. [backend] and [data] are required; [tokenizer], [eval_data],
// [optimizer] and [schedule] are created when present (`need_training` makes the last two
// required). Every object holds its plugin library alive (component.hpp). A dataset that checks
// its data against the run's vocabulary file gets the tokenizer's (loom/sdk/vocabulary_file.hpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "loom/sdk/backend.hpp"
#include "loom/sdk/communicator.hpp"
#include "loom/sdk/dataset.hpp"
#include "loom/sdk/optimizer.hpp"
#include "loom/sdk/precision.hpp"
#include "loom/sdk/schedule.hpp"
#include "loom/sdk/tokenizer.hpp"
#include "plugin_loading/component.hpp"
#include "plugin_loading/plugin_registry.hpp"
#include "recipe/recipe.hpp"

namespace loom::host {

struct RunComponents {
  /// Its extras, where it offers them, are `communicator.find<loom::ExtendedCollectives>()`.
  Component<loom::Communicator> communicator;
  Component<loom::Backend> backend;
  Component<loom::Precision> precision;
  Component<loom::Tokenizer> tokenizer;  ///< empty when the recipe has no [tokenizer]
  Component<loom::Dataset> data;         ///< empty unless `need_data`
  Component<loom::Dataset> eval_data;    ///< empty when the recipe has no [eval_data]
  Component<loom::Optimizer> optimizer;  ///< empty unless training
  Component<loom::Schedule> schedule;    ///< empty unless training
};

struct RunComponentNeeds {
  bool data = true;      ///< [data] required
  bool training = true;  ///< [optimizer] and [schedule] required
};

/// Creates the components; throws RecipeError naming the table for a missing or unknown one.
RunComponents create_run_components(const Recipe& recipe, const PluginRegistry& registry,
                                    const RunComponentNeeds& needs = {});

/// The tokenizer's [MASK] id, or none without a [tokenizer] (evaluation then reports masked-LM
/// metrics without the split by input category).
std::optional<int32_t> mask_token_id(RunComponents& components);

/// Creates the component of `table` (kind from `Interface`), or `fallback` (a component name with
/// no options) when the table is absent and `fallback` is not empty.
template <typename Interface>
Component<Interface> create_table_component(const Recipe& recipe, const PluginRegistry& registry,
                                            const std::string& table, const std::string& fallback);

}  // namespace loom::host
