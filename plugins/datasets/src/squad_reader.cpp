// SQuAD JSON → examples; see squad_reader.hpp.
#include "squad_reader.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <string_view>

#include <nlohmann/json.hpp>

#include "data_file.hpp"
#include "loom_json/json_problem.hpp"
#include "loom/sdk/error.hpp"

namespace loom_datasets {
namespace {

using Json = nlohmann::json;

// Length in bytes of the UTF-8 sequence starting with `lead` (1 for invalid bytes).
size_t utf8_length(unsigned char lead) {
  if (lead >= 0xF0 && lead < 0xF8) return 4;
  if (lead >= 0xE0) return lead < 0xF0 ? 3 : 1;
  if (lead >= 0xC0) return 2;
  return 1;
}

bool is_squad_whitespace(std::string_view c) {
  return c == " " || c == "\t" || c == "\r" || c == "\n" || c == "\xE2\x80\xAF";  // U+202F
}

std::vector<std::string> whitespace_words(const std::string& text) {
  std::vector<std::string> words;
  std::string word;
  for (size_t i = 0; i < text.size();) {
    const size_t n = std::min(utf8_length(static_cast<unsigned char>(text[i])), text.size() - i);
    const std::string_view c(text.data() + i, n);
    if (is_squad_whitespace(c)) {
      if (!word.empty()) words.push_back(std::move(word)), word.clear();
    } else {
      word += c;
    }
    i += n;
  }
  if (!word.empty()) words.push_back(std::move(word));
  return words;
}

std::string join(const std::vector<std::string>& words, size_t first, size_t last) {
  std::string out;
  for (size_t i = first; i <= last && i < words.size(); ++i) out += (i == first ? "" : " ") + words[i];
  return out;
}

// Type-checked access to one JSON file, every error naming the file and the field's path.
class Fields {
 public:
  explicit Fields(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw loom::IoError(path_ + ": " + where + ": " + what);
  }
  static std::string kind(const Json& value) {
    if (value.is_number_float()) return value.dump();  // 3.7 says more than "number"
    return std::string(value.type_name());
  }
  const Json& member(const Json& object, const std::string& where, const char* key) const {
    const auto found = object.find(key);
    if (found == object.end()) fail(where, std::string("missing \"") + key + "\"");
    return *found;
  }
  const Json& object(const Json& value, const std::string& where) const {
    if (!value.is_object()) fail(where, "expected an object, got " + kind(value));
    return value;
  }
  const Json& array(const Json& object, const std::string& where, const char* key) const {
    const Json& value = member(object, where, key);
    if (!value.is_array()) fail(where + "." + key, "expected an array, got " + kind(value));
    return value;
  }
  std::string string(const Json& object, const std::string& where, const char* key) const {
    const Json& value = member(object, where, key);
    if (!value.is_string()) fail(where + "." + key, "expected a string, got " + kind(value));
    return value.get<std::string>();
  }
  int64_t offset(const Json& object, const std::string& where, const char* key) const {
    const Json& value = member(object, where, key);
    if (value.is_number_unsigned())
      return static_cast<int64_t>(std::min<uint64_t>(value.get<uint64_t>(), INT64_MAX));
    if (!value.is_number_integer() || value.get<int64_t>() < 0)
      fail(where + "." + key, "expected a non-negative integer (a code-point offset), got " + kind(value));
    return value.get<int64_t>();
  }
  bool flag(const Json& object, const std::string& where, const char* key) const {
    const auto found = object.find(key);
    if (found == object.end()) return false;
    if (!found->is_boolean()) fail(where + "." + key, "expected true or false, got " + kind(*found));
    return found->get<bool>();
  }

 private:
  std::string path_;
};

std::string at(const std::string& where, const char* key, size_t index) {
  return where + (where.empty() ? "" : ".") + key + "[" + std::to_string(index) + "]";
}

}  // namespace

std::vector<SquadExample> read_squad_examples(const std::string& path, bool training,
                                              SquadReadReport& report) {
  std::ifstream in = open_data_file(path);
  Json root;
  try {
    root = Json::parse(in);
  } catch (const Json::exception& e) {
    throw loom::IoError(path + ": not valid JSON" + loom_json::json_parse_problem(e));
  }
  const Fields fields(path);
  if (!root.is_object() || !root.contains("data") || !root["data"].is_array())
    throw loom::IoError(path + ": key 'data': missing or not an array (is this a SQuAD file?)");
  std::vector<SquadExample> examples;
  std::map<std::string, std::string> seen;  // question id → where it first appeared
  report = SquadReadReport{};
  const Json& data = root["data"];
  for (size_t a = 0; a < data.size(); ++a) {
    const std::string article_at = at("", "data", a);
    const Json& paragraphs = fields.array(fields.object(data[a], article_at), article_at, "paragraphs");
    for (size_t p = 0; p < paragraphs.size(); ++p) {
      const std::string paragraph_at = at(article_at, "paragraphs", p);
      const Json& paragraph = fields.object(paragraphs[p], paragraph_at);
      const std::string context = fields.string(paragraph, paragraph_at, "context");
      // Words, and for every code point the word it belongs to (the reference's char_to_word_offset).
      std::vector<std::string> words;
      std::vector<int32_t> char_to_word;
      bool previous_whitespace = true;
      for (size_t i = 0; i < context.size();) {
        const size_t n = std::min(utf8_length(static_cast<unsigned char>(context[i])), context.size() - i);
        const std::string_view c(context.data() + i, n);
        if (is_squad_whitespace(c)) {
          previous_whitespace = true;
        } else {
          if (previous_whitespace) words.emplace_back();
          words.back() += c;
          previous_whitespace = false;
        }
        char_to_word.push_back(static_cast<int32_t>(words.size()) - 1);
        i += n;
      }
      const Json& qas = fields.array(paragraph, paragraph_at, "qas");
      for (size_t q = 0; q < qas.size(); ++q) {
        const std::string qa_at = at(paragraph_at, "qas", q);
        const Json& qa = fields.object(qas[q], qa_at);
        ++report.questions;
        SquadExample example;
        const Json& id = fields.member(qa, qa_at, "id");
        if (id.is_string())
          example.qas_id = id.get<std::string>();
        else if (id.is_number_integer())
          example.qas_id = id.dump();
        else
          fields.fail(qa_at + ".id", "expected a string, got " + Fields::kind(id));
        const auto [first, inserted] = seen.emplace(example.qas_id, qa_at);
        if (!inserted)
          fields.fail(qa_at + ".id", "question id '" + example.qas_id + "' is used twice (first at " +
                                         first->second +
                                         "); predictions are keyed by id, so give each question its own");
        example.question = fields.string(qa, qa_at, "question");
        example.doc_words = words;
        example.is_impossible = fields.flag(qa, qa_at, "is_impossible");
        static const Json kNone = Json::array();
        const Json& answers = qa.contains("answers") ? fields.array(qa, qa_at, "answers") : kNone;
        for (size_t k = 0; k < answers.size(); ++k) {
          const std::string answer_at = at(qa_at, "answers", k);
          const Json& answer = fields.object(answers[k], answer_at);
          example.answers.push_back(fields.string(answer, answer_at, "text"));
          if (answer.contains("answer_start")) fields.offset(answer, answer_at, "answer_start");
        }
        if (training && !example.is_impossible) {
          if (answers.empty())
            fields.fail(qa_at, "question '" + example.qas_id + "' has no answer and is not is_impossible");
          const std::string answer_at = at(qa_at, "answers", 0);
          example.answer_text = example.answers.front();
          const int64_t offset = fields.offset(answers[0], answer_at, "answer_start");
          int64_t length = 0;
          for (unsigned char c : example.answer_text) length += (c & 0xC0) != 0x80 ? 1 : 0;
          if (length == 0 || offset > static_cast<int64_t>(char_to_word.size()) - length)
            fields.fail(answer_at + ".answer_start",
                        "question '" + example.qas_id + "': " + std::to_string(offset) + " + the answer's " +
                            std::to_string(length) + " code points is outside its context of " +
                            std::to_string(char_to_word.size()));
          const int64_t last = offset + length - 1;
          example.start_word = char_to_word[static_cast<size_t>(offset)];
          example.end_word = char_to_word[static_cast<size_t>(last)];
          const std::string actual = join(words, static_cast<size_t>(std::max(example.start_word, 0)),
                                          static_cast<size_t>(std::max(example.end_word, 0)));
          const std::vector<std::string> cleaned_words = whitespace_words(example.answer_text);
          const std::string cleaned =
              cleaned_words.empty() ? "" : join(cleaned_words, 0, cleaned_words.size() - 1);
          if (example.start_word < 0 || actual.find(cleaned) == std::string::npos) {
            // The reference logs "Could not find answer" and drops the question; so do we, counted.
            if (report.dropped++ == 0)
              report.first_dropped = "question '" + example.qas_id + "' (" + answer_at + "): '" + cleaned +
                                     "' is not at answer_start " + std::to_string(offset) +
                                     ", which reads '" + actual + "'";
            continue;
          }
        }
        examples.push_back(std::move(example));
      }
    }
  }
  return examples;
}

}  // namespace loom_datasets
