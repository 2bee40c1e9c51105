// Labelled text readers; see text_examples.hpp.
#include "text_examples.hpp"

#include <algorithm>
#include <fstream>
#include <set>
#include <string_view>

#include <nlohmann/json.hpp>

#include "data_file.hpp"
#include "loom_json/json_problem.hpp"
#include "loom/sdk/error.hpp"

namespace loom_datasets {
namespace {

[[noreturn]] void fail(const std::string& path, uint64_t line, const std::string& what) {
  throw loom::IoError(path + ":" + std::to_string(line) + ": " + what);
}

int find_column(const std::vector<std::string>& header, std::initializer_list<const char*> names) {
  for (const char* name : names)
    for (size_t i = 0; i < header.size(); ++i)
      if (header[i] == name) return static_cast<int>(i);
  return -1;
}

std::vector<TextExample> read_tsv(std::ifstream& in, const std::string& path, const std::string& layout) {
  std::vector<TextExample> examples;
  std::string line;
  uint64_t number = 0;
  int text = 3, pair = -1, label = 1;  // CoLA
  if (layout != "cola") {
    if (!std::getline(in, line)) fail(path, 1, "empty file (expected a header line)");
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::vector<std::string> header = split_tabs(line);
    text = find_column(header, {"text", "sentence", "sentence1", "question1", "question", "#1 String"});
    pair = find_column(header, {"text_pair", "sentence2", "question2", "#2 String"});
    label = find_column(header, {"label", "gold_label", "is_duplicate", "Quality"});
    if (text < 0 || label < 0)
      fail(path, 1,
           "header has no text column (text/sentence/sentence1/question1/#1 String) or no label column "
           "(label/gold_label/is_duplicate/Quality); for headerless CoLA files set layout = \"cola\"");
  }
  const auto needed = static_cast<size_t>(std::max({text, pair, label}) + 1);
  while (std::getline(in, line)) {
    ++number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const std::vector<std::string> fields = split_tabs(line);
    if (fields.size() < needed)
      fail(path, number,
           "has " + std::to_string(fields.size()) + " tab-separated columns, the layout needs " +
               std::to_string(needed));
    TextExample example;
    example.text = fields[static_cast<size_t>(text)];
    if (pair >= 0) example.text_pair = fields[static_cast<size_t>(pair)], example.has_pair = true;
    example.label = fields[static_cast<size_t>(label)];
    example.line = number;
    if (example.label.empty()) fail(path, number, "empty label");
    examples.push_back(std::move(example));
  }
  return examples;
}

std::vector<TextExample> read_jsonl(std::ifstream& in, const std::string& path) {
  std::vector<TextExample> examples;
  std::string line;
  uint64_t number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    nlohmann::json object;
    try {
      object = nlohmann::json::parse(line);
    } catch (const nlohmann::json::exception& e) {
      // One line is one document: its "line 1" is this file's line `number`.
      std::string problem = loom_json::json_parse_problem(e);
      if (problem.rfind(" at line 1, ", 0) == 0) problem.replace(0, 12, " at ");
      fail(path, number, "not valid JSON" + problem);
    }
    if (!object.is_object() || !object.contains("text") || !object["text"].is_string())
      fail(path, number, "expected an object with a string \"text\"");
    TextExample example;
    example.text = object["text"].get<std::string>();
    if (object.contains("text_pair") && !object["text_pair"].is_null()) {
      if (!object["text_pair"].is_string()) fail(path, number, "\"text_pair\" must be a string");
      example.text_pair = object["text_pair"].get<std::string>();
      example.has_pair = true;
    }
    if (!object.contains("label")) fail(path, number, "missing \"label\"");
    const nlohmann::json& label = object["label"];
    if (label.is_string())
      example.label = label.get<std::string>();
    else if (label.is_number_integer())
      example.label = label.dump();  // its digits: get<int64_t>() would turn 2^64 - 1 into "-1"
    else
      fail(path, number, "\"label\" must be a string or an integer");
    example.line = number;
    examples.push_back(std::move(example));
  }
  return examples;
}

bool is_integer(const std::string& text) {
  if (text.empty()) return false;
  size_t start = text[0] == '-' ? 1 : 0;
  return start < text.size() && text.find_first_not_of("0123456789", start) == std::string::npos;
}

// Integer labels (is_integer) in numeric order at any length: labels are text, and one past the
// range of a 64-bit integer ("99999999999999999999") must sort, not throw out of a conversion.
// Equal values written differently ("7", "07", "-0", "0") are ordered by their text, so the order
// is total and the same on every run.
bool integer_less(const std::string& a, const std::string& b) {
  const auto magnitude = [](const std::string& text) {
    std::string_view digits(text);
    if (digits.front() == '-') digits.remove_prefix(1);
    const size_t first = digits.find_first_not_of('0');
    return first == std::string_view::npos ? std::string_view() : digits.substr(first);
  };
  const std::string_view x = magnitude(a), y = magnitude(b);
  const bool x_negative = a.front() == '-' && !x.empty(), y_negative = b.front() == '-' && !y.empty();
  if (x_negative != y_negative) return x_negative;
  if (x != y) {
    const bool smaller = x.size() != y.size() ? x.size() < y.size() : x < y;
    return x_negative ? !smaller : smaller;
  }
  return a < b;
}

}  // namespace

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> fields;
  size_t start = 0;
  for (;;) {
    const size_t tab = line.find('\t', start);
    fields.push_back(line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
    if (tab == std::string::npos) return fields;
    start = tab + 1;
  }
}

std::vector<TextExample> read_text_examples(const std::string& path, const std::string& format,
                                            const std::string& layout) {
  std::ifstream in = open_data_file(path);
  std::string chosen = format;
  if (chosen == "auto") {
    const auto ends_with = [&](const char* suffix) {
      const std::string s(suffix);
      return path.size() >= s.size() && path.compare(path.size() - s.size(), s.size(), s) == 0;
    };
    chosen = ends_with(".jsonl") || ends_with(".json") ? "jsonl" : "tsv";
  }
  std::vector<TextExample> examples = chosen == "jsonl" ? read_jsonl(in, path) : read_tsv(in, path, layout);
  if (examples.empty()) throw loom::IoError(path + ": no examples");
  return examples;
}

std::vector<std::string> label_set(const std::vector<TextExample>& examples,
                                   const std::vector<std::string>& configured, const std::string& path) {
  if (!configured.empty()) {
    for (const auto& example : examples)
      if (std::find(configured.begin(), configured.end(), example.label) == configured.end()) {
        std::string list;
        for (const auto& l : configured) list += (list.empty() ? "" : ", ") + l;
        fail(path, example.line, "label '" + example.label + "' is not in data.labels [" + list + "]");
      }
    return configured;
  }
  std::set<std::string> distinct;
  for (const auto& example : examples) distinct.insert(example.label);
  std::vector<std::string> labels(distinct.begin(), distinct.end());
  const bool numeric = std::all_of(labels.begin(), labels.end(), is_integer);
  if (numeric) std::sort(labels.begin(), labels.end(), integer_less);
  return labels;
}

}  // namespace loom_datasets
