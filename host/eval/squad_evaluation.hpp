// SquadEvaluation: a span-extraction evaluation's logits → SQuAD answers, files and EM/F1.
//
// The evaluator hands over each batch's start/end logits with the batch's instance ids; the
// dataset's describe_instance (dataset/squad: qas_id, example_index, doc_span_index, doc_words,
// token_to_word, token_is_max_context, answers, is_impossible) says which question and window each
// row is. `finish` decodes every question seen (squad_decode.hpp, in the dataset's question order),
// writes predictions.json, nbest_predictions.json and, for SQuAD v2.0, null_odds.json (the
// reference's layouts) into the output directory, and scores the answers against the gold answers
// of the descriptions with the official evaluation (squad_score.hpp).
// Metrics: eval_exact_match and eval_f1 (percent) and eval_questions; for v2.0 also
// eval_HasAns_*, eval_NoAns_* and, with null_odds as no-answer scores, eval_best_exact/_f1 and
// their thresholds.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/squad_decode.hpp"
#include "loom/sdk/dataset.hpp"
#include "loom/sdk/tokenizer.hpp"
#include "recipe/run_settings.hpp"

namespace loom::host {

/// The recipe's [squad] table as decoding options.
SquadDecodeOptions squad_decode_options(const RunSettings& settings);

/// get_final_text's basic tokenisation by the run's tokenizer (Tokenizer::pre_tokenize).
BasicTokenize basic_tokenize_with(const loom::Tokenizer& tokenizer);

class SquadEvaluation {
 public:
  /// `output_dir` "" writes no file (ranks other than 0).
  SquadEvaluation(const loom::Tokenizer& tokenizer, SquadDecodeOptions options,
                  std::filesystem::path output_dir);

  /// One evaluated batch: `input_ids` [rows × seq] and the logits [rows × seq] of its rows.
  void add_batch(const loom::Dataset& dataset, const std::vector<uint64_t>& instance_ids,
                 const int32_t* input_ids, int64_t rows, int64_t seq, const std::vector<float>& start_logits,
                 const std::vector<float>& end_logits);

  /// The decoded answers so far: predictions (id → text), nbest (id → entries), null_odds (v2.0).
  struct Decoded {
    nlohmann::ordered_json predictions = nlohmann::ordered_json::object();
    nlohmann::ordered_json nbest = nlohmann::ordered_json::object();
    nlohmann::ordered_json null_odds = nlohmann::ordered_json::object();
  };
  Decoded decode() const;

  /// Decodes, writes the files, scores; forgets the batches. A question without an answer under
  /// v1.1 options is scored the v2.0 way (with a warning: such data needs version_2_with_negative).
  nlohmann::json finish();

 private:
  struct Question {
    std::string id;
    std::vector<std::string> doc_words;
    std::vector<std::string> answers;
    std::map<uint32_t, SquadWindow> windows;  // by doc_span_index
  };
  const loom::Tokenizer& tokenizer_;
  SquadDecodeOptions options_;
  std::filesystem::path output_dir_;
  std::map<uint64_t, Question> questions_;  // by example_index: the file's order
  std::string description_;                 // describe_instance's buffer
};

}  // namespace loom::host
