// The task's label map applied to one split; see split_labels.hpp.
#include "split_labels.hpp"

#include <algorithm>

#include "loom/sdk/error.hpp"

namespace loom_datasets {
namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

std::vector<std::string> split_labels(const std::vector<TextExample>& examples,
                                      const std::vector<std::string>& configured, const TaskLabels& task,
                                      const std::string& path) {
  const std::string what = "the task's labels [" + joined(task.names) + "] (from " + task.source + ")";
  for (const std::string& name : configured)
    if (!contains(task.names, name))
      throw loom::IoError(path + ": labels option lists '" + name + "', which is not one of " + what +
                          "; every split of a task uses one label map: remove it from labels or add it "
                          "to the training split's labels");
  for (const TextExample& example : examples)
    if (!contains(task.names, example.label))
      throw loom::IoError(path + ":" + std::to_string(example.line) + ": label '" + example.label +
                          "' is not one of " + what +
                          "; every split of a task uses the training split's labels: correct the line, or "
                          "add the label to the training data (or its data.labels) and train again");
  return task.names;
}

}  // namespace loom_datasets
