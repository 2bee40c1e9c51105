// Reading labelled text examples for dataset/text-classification.
//
// TSV layouts (GLUE, split on tabs with no quoting, like GLUE's own csv.reader(quotechar=None)):
// - "header" (default; also "sst-2", "mrpc", "qqp", "mnli"): the first line names the columns;
//   text = the first of text, sentence, sentence1, question1, question, "#1 String";
//   text_pair (optional) = text_pair, sentence2, question2, "#2 String";
//   label = label, gold_label, is_duplicate, Quality. (SST-2: sentence/label; MRPC: Quality,
//   #1 String, #2 String; QQP: question1, question2, is_duplicate; MNLI: sentence1, sentence2,
//   gold_label; Loom's spam task: label, text.)
// - "cola": no header; columns source, label, original label, sentence.
// JSONL: one object per line, {"text": ..., "text_pair": ... (optional), "label": string or integer}.
// Errors name the file and line (1-based) and say what is wrong.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace loom_datasets {

struct TextExample {
  std::string text;
  std::string text_pair;
  bool has_pair = false;
  std::string label;  ///< as written in the file
  float target = 0;   ///< regression tasks (STS-B): the label as a number
  uint64_t line = 0;  ///< 1-based line in the file
};

/// The fields of one TSV line, split on every tab (no quoting, as GLUE's csv.reader(quotechar=None)).
std::vector<std::string> split_tabs(const std::string& line);

/// Reads `path`; `format` is "tsv", "jsonl" or "auto" (by extension: .jsonl/.json → jsonl).
/// `layout` applies to TSV (see above). Throws loom::IoError naming file:line.
std::vector<TextExample> read_text_examples(const std::string& path, const std::string& format,
                                            const std::string& layout);

/// The label list: `configured` when non-empty (every example's label must be in it), else the
/// distinct labels of `examples`, sorted (numerically when all are integers).
std::vector<std::string> label_set(const std::vector<TextExample>& examples,
                                   const std::vector<std::string>& configured, const std::string& path);

}  // namespace loom_datasets
