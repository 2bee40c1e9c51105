// One label map per task (loom/sdk/dataset_labels.hpp): a split that is handed the task's class
// names uses them, in their order, instead of a map built from its own file, so a class index
// means the same class in training, evaluation and the checkpoint's id2label. Labels are names:
// "1" in a dev file is the task's class named "1", wherever that class sits in the list.
#pragma once

#include <string>
#include <vector>

#include "text_examples.hpp"

namespace loom_datasets {

/// The task's labels as handed over by the host.
struct TaskLabels {
  std::vector<std::string> names;  ///< class index order; empty = none handed over
  std::string source;              ///< where they come from, for messages
};

/// The classes of a split read from `path`: `task.names`, after checking that every example's
/// label and every name in the split's own `configured` list (data.labels) is one of them.
/// Throws loom::IoError naming `path` and the line of the first unknown label (or the option).
std::vector<std::string> split_labels(const std::vector<TextExample>& examples,
                                      const std::vector<std::string>& configured, const TaskLabels& task,
                                      const std::string& path);

}  // namespace loom_datasets
