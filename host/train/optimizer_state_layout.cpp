// Recording and remapping the parameter layout of optimizer state; see optimizer_state_layout.hpp.
#include "train/optimizer_state_layout.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace loom::host {

std::string parameter_layout_record(const ParameterTable& table) {
  nlohmann::json record = nlohmann::json::array();
  for (const ParameterEntry& e : table.entries()) record.push_back({e.name, e.offset, e.count});
  return record.dump();
}

std::vector<StoredParameter> parse_parameter_layout(const std::string& record, const std::string& source) {
  const nlohmann::json json = nlohmann::json::parse(record, nullptr, /*allow_exceptions=*/false);
  const auto malformed = [&](const std::string& what) {
    return std::runtime_error(
        fmt::format("{}: metadata '{}' is malformed: {}", source, kParameterLayoutKey, what));
  };
  if (json.is_discarded() || !json.is_array()) throw malformed("not a JSON array");
  std::vector<StoredParameter> layout;
  for (const nlohmann::json& item : json) {
    if (!item.is_array() || item.size() != 3 || !item[0].is_string() || !item[1].is_number_unsigned() ||
        !item[2].is_number_unsigned())
      throw malformed("entry " + std::to_string(layout.size()) + " is not [name, offset, count]");
    layout.push_back({item[0].get<std::string>(), item[1].get<size_t>(), item[2].get<size_t>()});
  }
  return layout;
}

// Until the record existed, block/bert.encoder-layer declared each attention projection's weight
// followed by its bias (query.weight, query.bias, key.weight, key.bias, value.weight, value.bias);
// it now declares the three weights, then the three biases. Everything else kept its order.
std::vector<StoredParameter> unrecorded_parameter_layout(const ParameterTable& table) {
  static const char* const kNow[6] = {"query.weight", "key.weight", "value.weight",
                                      "query.bias",   "key.bias",   "value.bias"};
  static const int kBefore[6] = {0, 3, 1, 4, 2, 5};  // positions in kNow, in the order written before
  const std::vector<ParameterEntry>& entries = table.entries();
  std::vector<const ParameterEntry*> order;
  for (size_t i = 0; i < entries.size(); ++i) {
    const std::string& name = entries[i].name;
    const std::string suffix = "attention.self.query.weight";
    const bool group = name.size() >= suffix.size() &&
                       name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0 &&
                       i + 6 <= entries.size();
    const std::string prefix = group ? name.substr(0, name.size() - std::string("query.weight").size()) : "";
    bool now_order = group;
    for (int k = 0; now_order && k < 6; ++k)
      now_order = entries[i + static_cast<size_t>(k)].name == prefix + kNow[k];
    if (!now_order) {
      order.push_back(&entries[i]);
      continue;
    }
    for (int k : kBefore) order.push_back(&entries[i + static_cast<size_t>(k)]);
    i += 5;
  }
  std::vector<StoredParameter> layout;
  size_t offset = 0;
  for (const ParameterEntry* e : order) {
    layout.push_back({e->name, offset, e->count});
    offset = (offset + e->count + kParameterAlignment - 1) / kParameterAlignment * kParameterAlignment;
  }
  return layout;
}

void remap_state(const void* stored, size_t stored_count, const std::vector<StoredParameter>& layout,
                 const ParameterTable& table, float* out, size_t out_count, const std::string& source) {
  std::unordered_map<std::string, const StoredParameter*> by_name;
  for (const StoredParameter& p : layout) by_name.emplace(p.name, &p);
  std::fill(out, out + out_count, 0.0f);
  for (const ParameterEntry& e : table.entries()) {
    const auto found = by_name.find(e.name);
    if (found == by_name.end())
      throw std::runtime_error(
          fmt::format("{}: the optimizer state has no parameter '{}' (it was written for another model)",
                      source, e.name));
    const StoredParameter& p = *found->second;
    if (p.count != e.count)
      throw std::runtime_error(
          fmt::format("{}: parameter '{}' has {} elements in the optimizer state, the model {}", source,
                      e.name, p.count, e.count));
    if (p.offset > stored_count || p.count > stored_count - p.offset)
      throw std::runtime_error(fmt::format("{}: parameter '{}' lies outside the stored state ({} + {} > {})",
                                           source, e.name, p.offset, p.count, stored_count));
    if (e.offset + e.count > out_count)
      throw std::logic_error(
          fmt::format("remap_state: parameter '{}' lies outside the model's state", e.name));
    std::memcpy(out + e.offset, static_cast<const char*>(stored) + p.offset * sizeof(float),
                e.count * sizeof(float));
  }
}

}  // namespace loom::host
