// A model family's blocks, found by naming convention from its config.json, for the verbs that
// build a model from a checkpoint or a config alone (`loom debug-step`, `loom predict`): the family
// `model_type` ("bert" when the file has none, as in Google's original configs) names its blocks
// `<model_type>.embeddings`, `<model_type>.encoder-layer` (one per `num_hidden_layers`) and
// `<model_type>.<head>`, where head is one of kPretrainingHead, kClassifierHead, kSpanHead
// (docs/plugins.md, "Model families"). The host knows no family: a plugin that follows the
// convention is found by it.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "loom/sdk/backend.hpp"
#include "model/bert_config.hpp"
#include "model/model.hpp"
#include "plugin_loading/plugin_registry.hpp"

namespace loom::host {

inline constexpr const char* kPretrainingHead = "pretraining-heads";  ///< the pre-training objective's head
inline constexpr const char* kClassifierHead = "classifier-head";     ///< sequence classification
inline constexpr const char* kSpanHead = "span-head";                 ///< extractive question answering

/// The config's `model_type`, or "bert" when absent. Throws BertConfigError when it is not a string.
std::string model_family(const BertConfig& config, const std::string& source);

/// The block list of `config`'s family ending in `head`.
std::vector<std::string> family_blocks(const BertConfig& config, const std::string& source, const char* head);

/// A model of `config_path`'s family with `head`: reads the config, makes its ModelConfig and hands
/// the blocks the whole file.
std::unique_ptr<Model> family_model(const PluginRegistry& registry, const std::filesystem::path& config_path,
                                    const char* head, const Component<loom::Backend>& backend,
                                    loom::DType compute_dtype);

}  // namespace loom::host
