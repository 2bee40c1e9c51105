// libFuzzer target for the labelled-text readers of dataset/text-classification: the GLUE task
// layouts (glue_tasks.hpp: mrpc, sst-2, cola, sts-b, mnli) and the generic TSV and JSONL readers
// (text_examples.hpp), then the label maps built from what they read (label_set, split_labels).
// The input is one data file, read by every reader. Properties:
// - every refusal is a loom::IoError; nothing else escapes;
// - what a reader accepts has 1-based, increasing line numbers; a GLUE task's labels are its own
//   class names, and a regression task's targets are finite and in the task's range;
// - label_set returns distinct labels holding every example's label, and the configured list when
//   one is given; split_labels accepts exactly the examples whose labels are the task's.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.hpp"
#include "glue_tasks.hpp"
#include "loom/sdk/error.hpp"
#include "split_labels.hpp"
#include "text_examples.hpp"

using loom_datasets::TextExample;
using loom_fuzz::require;

namespace {

bool contains(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

void check_lines(const std::vector<TextExample>& examples) {
  require(!examples.empty(), "a reader that returns has examples");
  std::uint64_t previous = 0;
  for (const TextExample& example : examples) {
    require(example.line > previous, "line numbers are 1-based and increasing");
    previous = example.line;
    require(example.has_pair || example.text_pair.empty(), "a text pair only with has_pair");
  }
}

void check_labels(const std::vector<TextExample>& examples, const std::string& path) {
  std::vector<std::string> labels;
  try {
    labels = loom_datasets::label_set(examples, {}, path);
  } catch (const loom::IoError&) {
    require(false, "label_set without a configured list accepts every label");
  }
  require(std::set<std::string>(labels.begin(), labels.end()).size() == labels.size(), "labels are distinct");
  for (const TextExample& example : examples) require(contains(labels, example.label), "every label is listed");

  // A configured list and a task's list: the first label left out of both (an empty list means
  // none is configured).
  std::vector<std::string> configured(labels.begin() + 1, labels.end());
  if (configured.empty()) return;
  const bool all_listed = std::all_of(examples.begin(), examples.end(),
                                      [&](const TextExample& e) { return contains(configured, e.label); });
  try {
    require(loom_datasets::label_set(examples, configured, path) == configured, "the configured list is kept");
    require(all_listed, "label_set refuses a label outside the configured list");
  } catch (const loom::IoError&) {
    require(!all_listed, "label_set accepts labels inside the configured list");
  }
  try {
    const loom_datasets::TaskLabels task{configured, "the fuzz harness"};
    require(loom_datasets::split_labels(examples, {}, task, path) == configured, "the task's labels are kept");
    require(all_listed, "split_labels refuses a label outside the task's");
  } catch (const loom::IoError&) {
    require(!all_listed, "split_labels accepts labels inside the task's");
  }
}

void read_glue(const std::string& path, const std::string& name) {
  const loom_datasets::GlueTask* task = loom_datasets::find_glue_task(name);
  require(task != nullptr, "the task exists");
  std::vector<TextExample> examples;
  try {
    examples = loom_datasets::read_glue_examples(path, *task);
  } catch (const loom::IoError&) {
    return;
  }
  check_lines(examples);
  for (const TextExample& example : examples) {
    if (task->regression())
      require(std::isfinite(example.target) && example.target >= task->min_target &&
                  example.target <= task->max_target,
              "a regression target is in the task's range");
    else
      require(contains(task->labels, example.label), "a label is one of the task's");
  }
  check_labels(examples, path);
}

void read_generic(const std::string& path, const char* format, const char* layout) {
  std::vector<TextExample> examples;
  try {
    examples = loom_datasets::read_text_examples(path, format, layout);
  } catch (const loom::IoError&) {
    return;
  }
  check_lines(examples);
  check_labels(examples, path);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path =
      loom_fuzz::write_scratch_file("data.tsv", std::string_view(reinterpret_cast<const char*>(data), size));
  for (const std::string& name : loom_datasets::glue_task_names()) read_glue(path, name);
  read_generic(path, "tsv", "header");
  read_generic(path, "tsv", "cola");
  read_generic(path, "jsonl", "header");
  return 0;
}
