// Flat parameter layout; see parameter_table.hpp.
#include "model/parameter_table.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace loom::host {

const ParameterEntry& ParameterTable::add(std::string name, std::vector<int64_t> shape,
                                          loom::ParameterInit init, bool weight_decay, size_t block) {
  if (find(name) != nullptr)
    throw std::invalid_argument(fmt::format("parameter '{}' is declared twice", name));
  size_t count = 1;
  for (int64_t extent : shape) {
    if (extent <= 0)
      throw std::invalid_argument(fmt::format("parameter '{}' has shape [{}]; every extent must be positive",
                                              name, fmt::join(shape, ", ")));
    count *= static_cast<size_t>(extent);
  }
  ParameterEntry entry;
  entry.name = std::move(name);
  entry.shape = std::move(shape);
  entry.offset = total_;
  entry.count = count;
  entry.init = init;
  entry.weight_decay = weight_decay;
  entry.block = block;
  total_ = (total_ + count + kParameterAlignment - 1) / kParameterAlignment * kParameterAlignment;
  entries_.push_back(std::move(entry));
  return entries_.back();
}

void ParameterTable::add_alias(std::string name, std::string target, const std::vector<int64_t>& shape) {
  if (find(name) != nullptr)
    throw std::invalid_argument(fmt::format("parameter '{}' is declared twice", name));
  const ParameterEntry* tied = find(target);
  if (tied == nullptr)
    throw std::invalid_argument(fmt::format(
        "parameter '{}' is tied to '{}', which no earlier block declares (check the order of [model] blocks)",
        name, target));
  if (tied->shape != shape)
    throw std::invalid_argument(fmt::format("parameter '{}' [{}] is tied to '{}' of another shape [{}]", name,
                                            fmt::join(shape, ", "), target, fmt::join(tied->shape, ", ")));
  aliases_.push_back(ParameterAlias{std::move(name), tied->name});
}

const ParameterEntry* ParameterTable::find(const std::string& name) const {
  for (const auto& entry : entries_)
    if (entry.name == name) return &entry;
  for (const auto& alias : aliases_)
    if (alias.name == name) return find(alias.target);
  return nullptr;
}

size_t ParameterTable::parameter_count() const {
  size_t sum = 0;
  for (const auto& entry : entries_) sum += entry.count;
  return sum;
}

std::vector<loom::ParameterSegment> ParameterTable::segments(const std::vector<std::string>& frozen) const {
  std::vector<loom::ParameterSegment> segments;
  segments.reserve(entries_.size());
  std::vector<bool> prefix_used(frozen.size(), false);
  // A tied name (an alias) freezes the parameter it shares.
  std::vector<std::string> frozen_targets;
  for (const auto& alias : aliases_)
    for (size_t i = 0; i < frozen.size(); ++i)
      if (alias.name.rfind(frozen[i], 0) == 0) {
        prefix_used[i] = true;
        frozen_targets.push_back(alias.target);
      }
  for (const auto& entry : entries_) {
    bool is_frozen = std::find(frozen_targets.begin(), frozen_targets.end(), entry.name) != frozen_targets.end();
    for (size_t i = 0; i < frozen.size(); ++i)
      if (entry.name.rfind(frozen[i], 0) == 0) is_frozen = prefix_used[i] = true;
    if (is_frozen) continue;
    segments.push_back(
        loom::ParameterSegment{entry.name.c_str(), entry.offset, entry.count,
                               entry.weight_decay ? loom::DecayRule::decay : loom::DecayRule::no_decay});
  }
  for (size_t i = 0; i < frozen.size(); ++i) {
    if (prefix_used[i]) continue;
    std::vector<std::string> names;
    for (size_t e = 0; e < entries_.size() && e < 4; ++e) names.push_back("'" + entries_[e].name + "'");
    throw std::invalid_argument(fmt::format(
        "'{}' begins no parameter's name (Hugging Face names, prefixes such as 'model.embeddings.'; this "
        "model's {} parameters begin {}{})",
        frozen[i], entries_.size(), fmt::join(names, ", "), entries_.size() > names.size() ? ", …" : ""));
  }
  if (segments.empty() && !entries_.empty())
    throw std::invalid_argument("every parameter is frozen: nothing is left to train");
  return segments;
}

}  // namespace loom::host
