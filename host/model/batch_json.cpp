// Batches as JSON with Hugging Face names; see batch_json.hpp.
#include "model/batch_json.hpp"

#include <fstream>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "loom_json/json_problem.hpp"

namespace loom::host {
namespace {

int32_t as_int32(const nlohmann::json& value, const std::string& where) {
  if (!value.is_number_integer())
    throw std::runtime_error(fmt::format("{}: expected an integer, got {}", where, value.dump()));
  const int64_t v = value.get<int64_t>();
  if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
    throw std::runtime_error(fmt::format("{}: {} does not fit 32 bits", where, v));
  return static_cast<int32_t>(v);
}

// A [B][T] matrix; B and T must match the batch once known.
std::vector<int32_t> matrix(const nlohmann::json& json, const char* key, const std::string& source,
                            JsonBatch& batch) {
  if (!json.contains(key)) return {};
  const nlohmann::json& rows = json[key];
  const std::string where = fmt::format("{}: {}", source, key);
  if (!rows.is_array() || rows.empty())
    throw std::runtime_error(where + ": expected a non-empty array of rows");
  if (batch.batch == 0) batch.batch = static_cast<int64_t>(rows.size());
  if (static_cast<int64_t>(rows.size()) != batch.batch)
    throw std::runtime_error(fmt::format("{}: {} rows, input_ids has {}", where, rows.size(), batch.batch));
  std::vector<int32_t> out;
  for (size_t b = 0; b < rows.size(); ++b) {
    if (!rows[b].is_array() || rows[b].empty())
      throw std::runtime_error(fmt::format("{}[{}]: expected a non-empty array", where, b));
    if (batch.seq == 0) batch.seq = static_cast<int64_t>(rows[b].size());
    if (static_cast<int64_t>(rows[b].size()) != batch.seq)
      throw std::runtime_error(fmt::format("{}[{}]: {} columns, expected {} (rows must have equal length)",
                                           where, b, rows[b].size(), batch.seq));
    for (size_t t = 0; t < rows[b].size(); ++t)
      out.push_back(as_int32(rows[b][t], fmt::format("{}[{}][{}]", where, b, t)));
  }
  return out;
}

std::vector<int32_t> vector(const nlohmann::json& json, const char* key, const std::string& source,
                            int64_t rows) {
  if (!json.contains(key)) return {};
  const nlohmann::json& values = json[key];
  const std::string where = fmt::format("{}: {}", source, key);
  if (!values.is_array() || static_cast<int64_t>(values.size()) != rows)
    throw std::runtime_error(fmt::format("{}: expected an array of {} integers (one per row)", where, rows));
  std::vector<int32_t> out;
  for (size_t b = 0; b < values.size(); ++b)
    out.push_back(as_int32(values[b], fmt::format("{}[{}]", where, b)));
  return out;
}

}  // namespace

HostBatch JsonBatch::view() const {
  auto ptr = [](const std::vector<int32_t>& v) { return v.empty() ? nullptr : v.data(); };
  HostBatch out;
  out.batch = batch;
  out.seq = seq;
  out.input_ids = ptr(input_ids);
  out.token_type_ids = ptr(token_type_ids);
  out.attention_mask = ptr(attention_mask);
  out.mlm_labels = ptr(mlm_labels);
  out.next_sentence_labels = ptr(next_sentence_labels);
  out.labels = ptr(labels);
  out.start_positions = ptr(start_positions);
  out.end_positions = ptr(end_positions);
  return out;
}

int64_t JsonBatch::num_masked() const {
  int64_t count = 0;
  for (int32_t label : mlm_labels) count += label >= 0 ? 1 : 0;
  return count;
}

JsonBatch batch_from_json(const nlohmann::json& json, const std::string& source) {
  if (!json.is_object()) throw std::runtime_error(source + ": expected a JSON object");
  if (!json.contains("input_ids")) throw std::runtime_error(source + ": input_ids: missing required key");
  JsonBatch batch;
  batch.input_ids = matrix(json, "input_ids", source, batch);
  batch.token_type_ids = matrix(json, "token_type_ids", source, batch);
  batch.attention_mask = matrix(json, "attention_mask", source, batch);
  // "labels" is per token for pre-training (a matrix) and per sequence for classification.
  if (json.contains("labels") && json["labels"].is_array() && !json["labels"].empty() &&
      json["labels"][0].is_array())
    batch.mlm_labels = matrix(json, "labels", source, batch);
  else
    batch.labels = vector(json, "labels", source, batch.batch);
  batch.next_sentence_labels = vector(json, "next_sentence_label", source, batch.batch);
  batch.start_positions = vector(json, "start_positions", source, batch.batch);
  batch.end_positions = vector(json, "end_positions", source, batch.batch);
  static const char* const kKnown[] = {"input_ids",           "token_type_ids",  "attention_mask", "labels",
                                       "next_sentence_label", "start_positions", "end_positions"};
  for (const auto& [key, value] : json.items()) {
    bool known = false;
    for (const char* k : kKnown) known = known || key == k;
    if (!known) throw std::runtime_error(fmt::format("{}: unknown key '{}'", source, key));
  }
  return batch;
}

JsonBatch read_batch_json(const std::filesystem::path& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path.string() + ": cannot open");
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw std::runtime_error(path.string() + ": not valid JSON" + loom_json::json_parse_problem(e));
  }
  return batch_from_json(json, path.string());
}

}  // namespace loom::host
