// dataset/text-classification; see text_classification.hpp.
#include "text_classification.hpp"

#include <algorithm>
#include <bit>

#include <nlohmann/json.hpp>

#include "glue_tasks.hpp"
#include "loom/sdk/tokenizer.hpp"

namespace loom_datasets {

void EncodedSequences::append(const int32_t* ids_begin, const int32_t* types_begin, size_t count) {
  ids.insert(ids.end(), ids_begin, ids_begin + count);
  types.insert(types.end(), types_begin, types_begin + count);
  offsets.push_back(ids.size());
}

TextClassification::TextClassification(loom::ComponentContext& context) {
  loom::Options& o = context.options();
  file_ = o.required<std::string>("file");
  format_ = o.choice("format", "auto", {"auto", "tsv", "jsonl"});
  layout_ = o.choice("layout", "header", {"header", "sst-2", "mrpc", "qqp", "mnli", "cola"});
  task_ = o.get<std::string>("task", "");
  configured_labels_ = o.get<std::vector<std::string>>("labels", {});
  if (!task_.empty()) {
    const GlueTask* task = find_glue_task(task_);
    if (task == nullptr) {
      std::string list;
      for (const auto& name : glue_task_names()) list += (list.empty() ? "\"" : ", \"") + name + "\"";
      o.fail("task", "must be one of " + list + ", got \"" + task_ + "\"" +
                         loom::Options::suggestion(task_, glue_task_names()));
    } else {
      if (o.has("layout")) o.fail("layout", "task \"" + task_ + "\" reads its own layout: remove layout");
      if (!configured_labels_.empty()) {
        std::string list;
        for (const auto& l : task->labels) list += (list.empty() ? "" : ", ") + l;
        o.fail("labels",
               "task \"" + task_ + "\" fixes its labels" +
                   (task->regression() ? std::string(" (a real-valued score)") : " (" + list + ")") +
                   ": remove labels");
      }
      if (format_ == "jsonl") o.fail("format", "task \"" + task_ + "\" reads the task's TSV files");
    }
  }
  max_seq_length_ = o.get<int32_t>("max_seq_length", 128, loom::Range{8, 1 << 16});
  batch_size_ = o.get<int32_t>("batch_size", 32, loom::Range{1, 1 << 20});
  shuffle_ = o.get<bool>("shuffle", true);
  drop_last_ = o.get<bool>("drop_last", false);
  budget_ = read_token_budget(o, batch_size_, drop_last_);
}

void TextClassification::use_labels(const char* const* names, size_t count, const char* source) {
  task_labels_.names.assign(names, names + count);
  task_labels_.source = source != nullptr ? source : "the host";
}

void TextClassification::open(const loom::DatasetSetup& setup) {
  if (setup.tokenizer == nullptr)
    throw loom::ConfigError("dataset/text-classification needs a [tokenizer] table to tokenize " + file_);
  const GlueTask* task = task_.empty() ? nullptr : find_glue_task(task_);
  const std::vector<TextExample> examples =
      task != nullptr ? read_glue_examples(file_, *task) : read_text_examples(file_, format_, layout_);
  regression_ = task != nullptr && task->regression();
  labels_ = task != nullptr ? task->labels : label_set(examples, configured_labels_, file_);
  if (!regression_ && !task_labels_.names.empty())
    labels_ = split_labels(examples, configured_labels_, task_labels_, file_);
  // One class would read as num_labels = 1, which means regression (dataset.hpp).
  if (!regression_ && labels_.size() < 2)
    throw loom::IoError(file_ + ": every example has the label '" + labels_.front() +
                        "'; a classification needs at least two classes: list them in data.labels");
  encoded_ = EncodedSequences{};
  label_index_.clear();
  lines_.clear();
  const size_t capacity = static_cast<size_t>(max_seq_length_);
  std::vector<int32_t> ids(capacity), types(capacity);
  loom::EncodeOptions options;
  options.max_length = capacity;
  options.truncation = loom::Truncation::longest_first;
  options.pad_to_max_length = false;
  for (const TextExample& example : examples) {
    const size_t length = setup.tokenizer->encode(
        example.text.data(), example.text.size(), example.has_pair ? example.text_pair.data() : nullptr,
        example.text_pair.size(), options, loom::EncodedBuffers{ids.data(), types.data(), nullptr, capacity});
    encoded_.append(ids.data(), types.data(), std::min(length, capacity));
    label_index_.push_back(
        regression_ ? std::bit_cast<int32_t>(example.target)
                    : static_cast<int32_t>(std::find(labels_.begin(), labels_.end(), example.label) -
                                           labels_.begin()));
    lines_.push_back(example.line);
  }
  loom::BatchLimits limits{};
  limits.task = loom::BatchTask::classification;
  limits.batch_size = batch_size_;
  limits.max_seq_length = max_seq_length_;
  limits.num_labels = regression_ ? 1 : static_cast<int32_t>(labels_.size());
  start(setup, {examples.size()}, shuffle_, drop_last_, limits, budget_);
}

void TextClassification::load_row(uint64_t instance, uint64_t, Row& row) {
  const size_t begin = encoded_.offsets[instance];
  const size_t end = encoded_.offsets[instance + 1];
  row.ids.assign(encoded_.ids.begin() + static_cast<ptrdiff_t>(begin),
                 encoded_.ids.begin() + static_cast<ptrdiff_t>(end));
  row.types.assign(encoded_.types.begin() + static_cast<ptrdiff_t>(begin),
                   encoded_.types.begin() + static_cast<ptrdiff_t>(end));
  row.label = label_index_[instance];
}

const char* TextClassification::label_name(int32_t label) const {
  if (regression_ || label < 0 || static_cast<size_t>(label) >= labels_.size()) return nullptr;
  return labels_[static_cast<size_t>(label)].c_str();
}

size_t TextClassification::describe_instance(uint64_t id, char* json, size_t capacity) const {
  if (id >= lines_.size()) return copy_text("null", json, capacity);
  nlohmann::json description = {{"file", file_}, {"line", lines_[id]}};
  if (regression_)
    description["score"] = std::bit_cast<float>(label_index_[id]);
  else
    description["label"] = labels_[static_cast<size_t>(label_index_[id])];
  return copy_text(description.dump(), json, capacity);
}

}  // namespace loom_datasets
