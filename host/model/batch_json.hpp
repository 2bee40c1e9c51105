// A batch written as JSON with Hugging Face's argument names (for `loom debug-step` and tests):
//
//   {"input_ids": [[...], ...], "token_type_ids": [[...]], "attention_mask": [[...]],
//    "labels": [[..., -100 = ignored]], "next_sentence_label": [...]}
//
// input_ids is required; every other key is optional. All rows must have the same length. Every
// problem throws std::runtime_error naming the file and the key.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/batch_staging.hpp"

namespace loom::host {

/// A parsed batch that owns its arrays ([B·T] row-major or [B]; empty = absent).
struct JsonBatch {
  int64_t batch = 0;
  int64_t seq = 0;
  std::vector<int32_t> input_ids, token_type_ids, attention_mask, mlm_labels;
  std::vector<int32_t> next_sentence_labels, labels, start_positions, end_positions;

  /// Pointers into this batch, for BatchStaging::upload.
  HostBatch view() const;
  /// Number of labelled MLM positions (labels ≥ 0).
  int64_t num_masked() const;
};

/// Parses a batch object; `source` names it in errors.
JsonBatch batch_from_json(const nlohmann::json& json, const std::string& source);
/// Reads and parses a batch file.
JsonBatch read_batch_json(const std::filesystem::path& path);

}  // namespace loom::host
