// Test helpers: datasets and the wordpiece tokenizer created through the host registry, and
// host-side batch buffers sized from a dataset's limits.
#pragma once

#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "plugin_loading/plugin_registry.hpp"
#include "loom/sdk/dataset.hpp"
#include "loom/sdk/tokenizer.hpp"

namespace datasets_test {

inline loom::host::PluginRegistry& registry() {
  static loom::host::PluginRegistry instance([] {
    loom::host::PluginSearchOptions search;
    search.directories = {LOOM_PLUGIN_DIR};
    search.default_paths = false;
    search.environment = false;
    return search;
  }());
  return instance;
}

inline loom::host::Component<loom::Dataset> make_dataset(const std::string& name, const std::string& toml) {
  const auto* entry = registry().find(LOOM_KIND_DATASET, name);
  if (entry == nullptr) throw std::runtime_error("dataset/" + name + " not found in " LOOM_PLUGIN_DIR);
  return registry().create<loom::Dataset>(*entry, {"data", toml, "", "test.toml:1:1"}, false);
}

inline loom::host::Component<loom::Tokenizer> make_tokenizer(const std::string& vocab) {
  const auto* entry = registry().find(LOOM_KIND_TOKENIZER, "wordpiece");
  if (entry == nullptr) throw std::runtime_error("tokenizer/wordpiece not found in " LOOM_PLUGIN_DIR);
  return registry().create<loom::Tokenizer>(
      *entry, {"tokenizer", "vocab = \"" + vocab + "\"\n", "", "test.toml:1:1"}, false);
}

/// What `body` throws (its what()), or "" when it returns.
inline std::string error_of(const std::function<void()>& body) {
  try {
    body();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

inline std::string data_file(const std::string& name) {
  return std::string(DATASETS_TEST_DATA) + "/" + name;
}

/// Every buffer of dataset.hpp, sized from limits.
struct Batch {
  explicit Batch(const loom::BatchLimits& l)
      : tokens(static_cast<size_t>(l.batch_size) * static_cast<size_t>(l.max_seq_length)),
        predictions(static_cast<size_t>(l.batch_size) * static_cast<size_t>(std::max(l.max_predictions, 1))),
        rows(static_cast<size_t>(l.batch_size)),
        input_ids(tokens),
        token_type_ids(tokens),
        attention_mask(tokens),
        mlm_labels(tokens),
        masked_positions(predictions),
        masked_ids(predictions),
        next_sentence_labels(rows),
        labels(rows),
        start_positions(rows),
        end_positions(rows),
        instance_ids(rows) {}
  loom::BatchBuffers buffers() {
    return {input_ids.data(),        token_type_ids.data(), attention_mask.data(),       mlm_labels.data(),
            masked_positions.data(), masked_ids.data(),     next_sentence_labels.data(), labels.data(),
            start_positions.data(),  end_positions.data(),  instance_ids.data()};
  }
  size_t tokens, predictions, rows;
  std::vector<int32_t> input_ids, token_type_ids, attention_mask, mlm_labels, masked_positions, masked_ids,
      next_sentence_labels, labels, start_positions, end_positions;
  std::vector<uint64_t> instance_ids;
  loom::BatchShape shape{};
  /// Row r, column c of a [B·S] buffer of the last batch.
  int32_t at(const std::vector<int32_t>& buffer, int32_t r, int32_t c) const {
    return buffer[static_cast<size_t>(r) * static_cast<size_t>(shape.seq) + static_cast<size_t>(c)];
  }
};

inline loom::DatasetSetup setup(uint64_t seed = 42, int32_t rank = 0, int32_t world = 1,
                                const loom::Tokenizer* tokenizer = nullptr) {
  return loom::DatasetSetup{rank, world, seed, tokenizer};
}

}  // namespace datasets_test
