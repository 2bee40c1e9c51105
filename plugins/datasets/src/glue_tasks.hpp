// The GLUE tasks' own file layouts, read as they come by naming the task (dataset/text-classification's
// `task` option; docs/decisions/glue-tasks.md). Where a file has a header, columns are found by
// name (the reference's processors take fixed positions of the same files):
//   mrpc   msr_paraphrase_{train,test}.txt and GLUE's {train,dev}.tsv, header
//          "Quality  #1 ID  #2 ID  #1 String  #2 String": pair (#1 String, #2 String), label Quality 0/1
//   sst-2  header "sentence  label": one sentence, label 0/1
//   cola   no header; source, label, original label ("*" or empty), sentence: label 0/1
//   sts-b  header with sentence1, sentence2, score: pair, real-valued score in [0, 5] (regression)
//   mnli   header with sentence1, sentence2, gold_label (train.tsv, dev_matched.tsv,
//          dev_mismatched.tsv): labels contradiction, entailment, neutral (the reference's order)
// Lines split on tabs with no quoting (GLUE's csv.reader(quotechar=None)); a UTF-8 byte-order mark
// before the first line and a CR before each line end are dropped; blank lines are skipped. Every
// problem is a loom::IoError naming file:line and what to do; GLUE's unlabelled test.tsv files are
// refused as such.
#pragma once

#include <string>
#include <vector>

#include "text_examples.hpp"

namespace loom_datasets {

struct GlueTask {
  const char* name;                 ///< the `task` option's value
  bool header;                      ///< the first line names the columns
  const char* text;                 ///< header name of the first sentence (header tasks)
  const char* text_pair;            ///< header name of the second sentence, nullptr: single sentences
  const char* label;                ///< header name of the label (header tasks)
  std::vector<std::string> labels;  ///< class names in index order; empty: regression
  double min_target, max_target;    ///< regression: the range a target must lie in
  bool regression() const { return labels.empty(); }
};

/// The task called `name`, or nullptr.
const GlueTask* find_glue_task(const std::string& name);
/// Every task name, in the order the docs list them.
std::vector<std::string> glue_task_names();

/// Reads `path` in `task`'s layout; labels are checked against the task's (or, regression,
/// parsed into TextExample::target and range-checked).
std::vector<TextExample> read_glue_examples(const std::string& path, const GlueTask& task);

}  // namespace loom_datasets
