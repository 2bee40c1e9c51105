// Describing a batch's rows by their files and lines; see batch_rows.hpp.
#include "eval/batch_rows.hpp"

#include <algorithm>
#include <exception>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace loom::host {
namespace {

nlohmann::json describe(const loom::Dataset& dataset, uint64_t id) {
  try {
    std::string text(4096, '\0');
    size_t size = dataset.describe_instance(id, text.data(), text.size());
    if (size > text.size()) {  // a SQuAD window with its words: ask again with room for all of it
      text.resize(size);
      size = dataset.describe_instance(id, text.data(), text.size());
    }
    text.resize(std::min(size, text.size()));
    return nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  } catch (const std::exception&) {
    return nullptr;  // describing is a courtesy; the failure being reported matters more
  }
}

std::string range(const char* one, const char* many, uint64_t low, uint64_t high) {
  return low == high ? fmt::format("{} {}", one, low) : fmt::format("{} {}-{}", many, low, high);
}

}  // namespace

std::string describe_rows(const loom::Dataset& dataset, std::span<const uint64_t> ids) {
  if (ids.empty()) return "an empty batch";
  std::string file;
  bool one_file = true, lines = true, rows = true;
  uint64_t low = UINT64_MAX, high = 0;
  std::vector<std::string> questions;
  for (uint64_t id : ids) {
    const nlohmann::json d = describe(dataset, id);
    const bool has_file = d.is_object() && d.contains("file") && d["file"].is_string();
    if (has_file && file.empty()) file = d["file"].get<std::string>();
    one_file = one_file && has_file && d["file"].get<std::string>() == file;
    const char* key = d.is_object() && d.contains("line") ? "line" : "row";
    lines = lines && key == std::string("line") && d[key].is_number_unsigned();
    rows = rows && d.is_object() && d.contains("row") && d["row"].is_number_unsigned();
    if (d.is_object() && d.contains(key) && d[key].is_number_unsigned()) {
      low = std::min(low, d[key].get<uint64_t>());
      high = std::max(high, d[key].get<uint64_t>());
    }
    if (d.is_object() && d.contains("qas_id") && d["qas_id"].is_string())
      questions.push_back(d["qas_id"].get<std::string>());
  }
  if (one_file && lines)
    return low == high ? fmt::format("{}:{}", file, low) : fmt::format("{} lines {}-{}", file, low, high);
  if (one_file && rows) return fmt::format("{} {}", file, range("row", "rows", low, high));
  if (questions.size() == ids.size()) {
    std::sort(questions.begin(), questions.end());
    questions.erase(std::unique(questions.begin(), questions.end()), questions.end());
    if (questions.size() == 1) return "question id " + questions.front();
    const size_t shown = std::min<size_t>(questions.size(), 3);
    std::string list;
    for (size_t i = 0; i < shown; ++i) list += (i == 0 ? "" : ", ") + questions[i];
    return fmt::format("question ids {}{} ({})", list, shown < questions.size() ? ", ..." : "",
                       questions.size());
  }
  const auto [first, last] = std::minmax_element(ids.begin(), ids.end());
  return range("instance", "instances", *first, *last) + " of the dataset";
}

}  // namespace loom::host
