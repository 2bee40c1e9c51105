// GLUE task layouts; see glue_tasks.hpp.
#include "glue_tasks.hpp"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "data_file.hpp"
#include "loom/sdk/error.hpp"

namespace loom_datasets {
namespace {

// CoLA has no header: its columns by position.
constexpr size_t kColaLabel = 1, kColaSentence = 3, kColaColumns = 4;

const std::vector<GlueTask>& tasks() {
  static const std::vector<GlueTask> all = {
      {"mrpc", true, "#1 String", "#2 String", "Quality", {"0", "1"}, 0, 0},
      {"sst-2", true, "sentence", nullptr, "label", {"0", "1"}, 0, 0},
      {"cola", false, nullptr, nullptr, nullptr, {"0", "1"}, 0, 0},
      {"sts-b", true, "sentence1", "sentence2", "score", {}, 0.0, 5.0},
      {"mnli",
       true,
       "sentence1",
       "sentence2",
       "gold_label",
       {"contradiction", "entailment", "neutral"},
       0,
       0},
  };
  return all;
}

[[noreturn]] void fail(const std::string& path, uint64_t line, const std::string& what) {
  throw loom::IoError(path + ":" + std::to_string(line) + ": " + what);
}

std::string joined(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ", ") + item;
  return out;
}

// Where `name` is in the header, or a failure naming the task and the columns the file has.
size_t column(const std::vector<std::string>& header, const char* name, const GlueTask& task,
              const std::string& path) {
  const auto found = std::find(header.begin(), header.end(), name);
  if (found != header.end()) return static_cast<size_t>(found - header.begin());
  const bool unlabelled = std::string(name) == task.label;
  fail(path, 1,
       std::string("the header has no '") + name + "' column, which task \"" + task.name +
           "\" reads (columns: " + joined(header) + ")" +
           (unlabelled ? "; GLUE's test.tsv files carry no labels: evaluate on the dev file instead" : ""));
}

std::string number_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

float parse_target(const std::string& text, const GlueTask& task, const std::string& path, uint64_t line) {
  errno = 0;
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || errno == ERANGE || !std::isfinite(value))
    fail(path, line, "score '" + text + "' is not a number");
  if (value < task.min_target || value > task.max_target)
    fail(path, line,
         "score " + text + " is outside [" + number_text(task.min_target) + ", " +
             number_text(task.max_target) + "], the range task \"" + task.name + "\" scores in");
  return static_cast<float>(value);
}

}  // namespace

const GlueTask* find_glue_task(const std::string& name) {
  for (const GlueTask& task : tasks())
    if (name == task.name) return &task;
  return nullptr;
}

std::vector<std::string> glue_task_names() {
  std::vector<std::string> names;
  for (const GlueTask& task : tasks()) names.push_back(task.name);
  return names;
}

std::vector<TextExample> read_glue_examples(const std::string& path, const GlueTask& task) {
  std::ifstream in = open_data_file(path);
  size_t text = kColaSentence, pair = 0, label = kColaLabel, needed = kColaColumns;
  bool has_pair = false;
  std::vector<TextExample> examples;
  std::string line;
  uint64_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (number == 1 && line.rfind("\xEF\xBB\xBF", 0) == 0) line.erase(0, 3);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (number == 1 && task.header) {
      const std::vector<std::string> header = split_tabs(line);
      text = column(header, task.text, task, path);
      has_pair = task.text_pair != nullptr;
      if (has_pair) pair = column(header, task.text_pair, task, path);
      label = column(header, task.label, task, path);
      needed = std::max({text, pair, label}) + 1;
      continue;
    }
    if (line.empty()) continue;
    const std::vector<std::string> fields = split_tabs(line);
    if (fields.size() < needed)
      fail(path, number,
           "has " + std::to_string(fields.size()) + " tab-separated columns, task \"" + task.name +
               "\" needs " + std::to_string(needed) +
               (task.header
                    ? " (as many as the header names)"
                    : " (source, label, original label, sentence; GLUE's CoLA test.tsv has no labels)"));
    TextExample example;
    example.text = fields[text];
    if (has_pair) example.text_pair = fields[pair], example.has_pair = true;
    example.label = fields[label];
    example.line = number;
    if (task.regression()) {
      example.target = parse_target(example.label, task, path, number);
    } else if (std::find(task.labels.begin(), task.labels.end(), example.label) == task.labels.end()) {
      fail(path, number,
           "label '" + example.label + "' is not one of task \"" + task.name + "\"'s labels (" +
               joined(task.labels) + ")");
    }
    examples.push_back(std::move(example));
  }
  if (number == 0) throw loom::IoError(path + ": empty file");
  if (examples.empty()) throw loom::IoError(path + ": no examples after the header");
  return examples;
}

}  // namespace loom_datasets
