// The task's label map across splits; see task_labels.hpp.
#include "train/task_labels.hpp"

#include <fmt/format.h>

#include "loom/sdk/dataset_labels.hpp"
#include "recipe/errors.hpp"

namespace loom::host {
namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
  return "[" + out + "]";
}

std::vector<std::string> split_names(const Component<loom::Dataset>& split, const loom::BatchLimits& limits) {
  std::vector<std::string> names;
  for (int32_t i = 0; i < limits.num_labels; ++i) {
    const char* name = split.call([&](loom::Dataset& d) { return d.label_name(i); });
    if (name == nullptr) return {};
    names.emplace_back(name);
  }
  return names;
}

}  // namespace

TaskLabels dataset_task_labels(const Component<loom::Dataset>& data, const std::string& source) {
  const loom::BatchLimits limits = data.call([](loom::Dataset& d) { return d.limits(); });
  if (limits.task != loom::BatchTask::classification || limits.num_labels < 2) return {{}, source};
  return {split_names(data, limits), source};
}

TaskLabels config_task_labels(const BertConfig& config, const std::string& source) {
  const auto found = config.extra.find("id2label");
  if (found == config.extra.end() || !found->is_object() || found->size() < 2) return {{}, source};
  std::vector<std::string> names;
  bool placeholders = true;
  for (size_t i = 0; i < found->size(); ++i) {
    const auto name = found->find(std::to_string(i));
    if (name == found->end() || !name->is_string()) return {{}, source};
    names.push_back(name->get<std::string>());
    placeholders = placeholders && names.back() == "LABEL_" + std::to_string(i);
  }
  if (placeholders) return {{}, source};
  return {names, source};
}

void hand_task_labels(const Component<loom::Dataset>& split, const TaskLabels& labels) {
  if (labels.names.empty()) return;
  auto* receiver = split.find<loom::DatasetLabels>();
  if (receiver == nullptr) return;  // checked by name after it opens
  std::vector<const char*> names;
  for (const auto& name : labels.names) names.push_back(name.c_str());
  split.call(
      [&](loom::Dataset&) { receiver->use_labels(names.data(), names.size(), labels.source.c_str()); });
}

void check_split_labels(const Component<loom::Dataset>& split, const std::string& table,
                        const TaskLabels& labels, int32_t num_labels) {
  const loom::BatchLimits limits = split.call([](loom::Dataset& d) { return d.limits(); });
  if (limits.task != loom::BatchTask::classification) return;
  if (labels.names.empty()) {
    if (limits.num_labels != num_labels)
      throw InputError(fmt::format(
          "[{}] has {} classes but the task has {} ({}): one label map applies to every split; give "
          "both splits the same labels option",
          table, limits.num_labels, num_labels, labels.source));
    return;
  }
  const std::vector<std::string> names = split_names(split, limits);
  if (names != labels.names)
    throw InputError(
        fmt::format("[{}] ({}) numbers its classes {}, the task {} (from {}): one label map applies to every "
                    "split; give both splits the same labels option",
                    table, split.name(), joined(names), joined(labels.names), labels.source));
}

}  // namespace loom::host
