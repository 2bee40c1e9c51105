// One label map per classification task, applied to every split (loom/sdk/dataset_labels.hpp).
//
// Each split is its own dataset component, and left alone each numbers its classes from its own
// file: a dev file with its labels listed in another order, or with fewer classes, would make class
// 1 mean something else than in training, and every metric would be silently wrong. So the task's
// map comes from one place — the training split (`loom run`) or the checkpoint's config.json
// id2label (`loom eval`) — and is handed to every other split before it opens; after it opens,
// its class names must be exactly the task's, or the run stops with both lists named.
#pragma once

#include <string>
#include <vector>

#include "loom/sdk/dataset.hpp"
#include "model/bert_config.hpp"
#include "plugin_loading/component.hpp"

namespace loom::host {

/// A task's class names in index order, and where they come from (for messages).
struct TaskLabels {
  std::vector<std::string> names;  ///< empty: none known (regression, unnamed classes)
  std::string source;
};

/// The class names of an opened classification dataset (label_name(0 … num_labels−1)); empty
/// for any other task, for regression, or when a class has no name.
TaskLabels dataset_task_labels(const Component<loom::Dataset>& data, const std::string& source);

/// The names of config.json's id2label, in index order; empty when there is none, when it does not
/// number its classes 0 … n−1, or when it holds Hugging Face's placeholders LABEL_0 … LABEL_{n−1}
/// (a config that never named its classes).
TaskLabels config_task_labels(const BertConfig& config, const std::string& source);

/// Before `split` opens: hands it the task's names when it offers loom::DatasetLabels.
void hand_task_labels(const Component<loom::Dataset>& split, const TaskLabels& labels);

/// After `split` (recipe table `table`) opened: its classes must be `labels`' names in order (or,
/// when no names are known, as many as `num_labels`, for a classification split). Throws InputError
/// naming the table and both lists.
void check_split_labels(const Component<loom::Dataset>& split, const std::string& table,
                        const TaskLabels& labels, int32_t num_labels);

}  // namespace loom::host
