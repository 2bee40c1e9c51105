// Reading SQuAD v1.1 / v2.0 JSON into examples, as DLE's run_squad.py read_squad_examples does
// (docs/reference.md §7.1), with every field type-checked:
// - context split on whitespace (space, \t, \r, \n, U+202F) into words with a code point → word
//   map; answer_start counts Unicode code points;
// - a training answer whose text is not found in the words its offsets map to is dropped (the
//   reference's "Could not find answer"), counted in SquadReadReport; the dataset refuses the
//   file when more than a small share is dropped (docs/decisions/dropped-examples.md);
// - errors (loom::IoError) name the file and the field as a JSON path
//   (`data[0].paragraphs[2].qas[1].answers[0].answer_start`) and say what was expected; a
//   question id used twice is an error, since predictions are keyed by id.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace loom_datasets {

struct SquadExample {
  std::string qas_id;
  std::string question;
  std::vector<std::string> doc_words;
  std::vector<std::string> answers;  ///< all given answer texts (evaluation)
  bool is_impossible = false;
  std::string answer_text;  ///< training answer (the first one)
  int32_t start_word = -1;  ///< training answer's first/last word; -1 when impossible
  int32_t end_word = -1;
};

/// What reading a file kept and dropped.
struct SquadReadReport {
  uint64_t questions = 0;     ///< in the file
  uint64_t dropped = 0;       ///< training answers not found where answer_start points
  std::string first_dropped;  ///< the first of them: question id, where, and what was found there
};

/// Parses a SQuAD JSON file (`training`: locate each answer; otherwise keep every question).
std::vector<SquadExample> read_squad_examples(const std::string& path, bool training,
                                              SquadReadReport& report);

}  // namespace loom_datasets
