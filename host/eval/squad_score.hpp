// The official SQuAD evaluation (evaluate-v1.1.py and evaluate-v2.0.py), number for number:
// the same normalisation (squad_normalize.hpp), the same sums in the same order, so the doubles
// printed are the ones Python prints (tests/tools/squad_official_eval.py re-implements the
// scripts; the tests compare both on tests/fixtures/squad/).
//
// v1.1: {"exact_match", "f1"} in percent; the best over a question's gold answers; a question
// without a prediction counts 0 (and is named in `notes`).
// v2.0: {"exact", "f1", "total", "HasAns_exact", "HasAns_f1", "HasAns_total", "NoAns_exact",
// "NoAns_f1", "NoAns_total"} (a split only when it has questions) and, with no-answer
// probabilities, "best_exact", "best_exact_thresh", "best_f1", "best_f1_thresh"
// (find_best_thresh: probabilities ascending, ties in the file's order). Gold answers that
// normalise to "" are dropped ("" is an unanswerable question's only gold answer). A prediction
// whose no-answer probability exceeds `na_prob_thresh` (default 1.0; without probabilities every
// one is 0.0) counts as "no answer".
// Inputs that make the official scripts fail (no questions, a v1.1 question without answers, a
// v2.0 question without a prediction, a missing probability, a non-string prediction) and
// malformed files throw InputError naming the file and the place in it.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace loom::host {

/// The gold side of a SQuAD file: its version and its questions in file order.
struct SquadGold {
  std::string path;
  bool version_2 = false;  ///< "version": "2.0"/"v2.0" (else "1.1"/"v1.1")
  struct Question {
    std::string id;
    std::vector<std::string> answers;  ///< the answers' texts, in file order
  };
  std::vector<Question> questions;
};

/// Reads a SQuAD dev/train file (v1.1 or v2.0 by its "version"). Throws InputError.
SquadGold read_squad_gold(const std::string& path);

/// Parses a JSON file whose top level is an object (keys keep the file's order; a repeated key
/// keeps its first place and its last value, as Python's json does). Throws InputError.
nlohmann::ordered_json read_json_object(const std::string& path, const std::string& what);

/// Token F1 of the scripts: v1.1's f1_score (0 when nothing is shared, even two empty answers)
/// or v2.0's compute_f1 (1 when both normalise to no token).
double squad_f1(const std::string& prediction, const std::string& gold, bool version_2);

/// evaluate-v1.1.py's evaluate(). `predictions`: question id → answer text.
nlohmann::ordered_json score_squad_v1(const SquadGold& gold, const nlohmann::ordered_json& predictions,
                                      const std::string& predictions_path, std::vector<std::string>& notes);

/// evaluate-v2.0.py's main(). `na_probs`: question id → probability, or nullopt.
nlohmann::ordered_json score_squad_v2(const SquadGold& gold, const nlohmann::ordered_json& predictions,
                                      const std::string& predictions_path,
                                      const std::optional<nlohmann::ordered_json>& na_probs,
                                      const std::string& na_probs_path, double na_prob_thresh);

/// What `loom score squad` prints: reads the files and scores per the dev file's version.
/// `na_probs_path` "" for none (a v1.1 file with one is an InputError).
nlohmann::ordered_json score_squad_files(const std::string& dev_path, const std::string& predictions_path,
                                         const std::string& na_probs_path, double na_prob_thresh,
                                         std::vector<std::string>& notes);

}  // namespace loom::host
