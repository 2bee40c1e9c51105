// SQuAD decoding as the reference's run_squad.py does it (get_answers): the start/end logits of a
// question's windows become its answer text and its n-best list.
//
// Per window: the n_best_size highest start logits × the n_best_size highest end logits (ties:
// lower position first); a pair is kept when both positions map to a word of the context, the
// window is the start token's max-context window, end ≥ start and end − start + 1 ≤
// max_answer_length. Kept pairs are ranked by start + end logit; the window's first n_best_size
// distinct answer texts survive (text: the WordPieces joined, "##" glued, projected onto the
// original words by get_final_text, squad_final_text.hpp).
// Per question: every window's survivors (and, for SQuAD v2.0, the null answer "" scored by the
// smallest start[0] + end[0] over the windows) ranked by start + end logit, the first n_best_size
// kept, probabilities by softmax over their scores. No survivor at all: the reference's nonce
// answer "empty" with logits 0. The answer is the best entry; for v2.0 the best non-empty entry,
// or "" when null score − its score > null_score_diff_threshold.
// Decisions where the reference's code has a slip: the null score is the question's own (the
// reference reads the last question's), and a v2.0 question whose n-best has no non-empty entry
// gets the nonce "empty" entry instead of failing (docs/decisions/squad-evaluation.md).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "eval/squad_final_text.hpp"

namespace loom::host {

/// The reference's decoding options (run_squad.py's defaults).
struct SquadDecodeOptions {
  int32_t n_best_size = 20;
  int32_t max_answer_length = 30;
  bool version_2_with_negative = false;
  double null_score_diff_threshold = 0.0;
};

/// One window (feature) of a question and the model's logits over it.
struct SquadWindow {
  std::vector<std::string> tokens;     ///< the window's WordPieces: [CLS] query [SEP] span [SEP]
  std::vector<int32_t> token_to_word;  ///< per token: its context word, -1 outside the context
  std::vector<uint8_t> max_context;    ///< per token: 1 when this is its max-context window
  std::vector<float> start_logits;     ///< per position, at least tokens.size() (padding ignored)
  std::vector<float> end_logits;
};

/// A question: its id, the context's whitespace-separated words, its windows in order.
struct SquadQuestion {
  std::string id;
  std::vector<std::string> doc_words;
  std::vector<SquadWindow> windows;
};

struct SquadNbestEntry {
  std::string text;
  double probability = 0;
  double start_logit = 0;
  double end_logit = 0;
};

struct SquadAnswer {
  std::string text;
  std::vector<SquadNbestEntry> nbest;
  std::optional<double> null_score_diff;  ///< v2.0: null score − best non-empty score (null_odds.json)
};

/// Decodes one question; throws std::invalid_argument when a window's arrays disagree in length.
SquadAnswer decode_squad_question(const SquadQuestion& question, const SquadDecodeOptions& options,
                                  const BasicTokenize& basic_tokenize);

/// The indices of the `n` largest values, largest first, ties in index order (_get_best_indices).
std::vector<size_t> best_indices(const std::vector<float>& logits, size_t count, size_t n);

}  // namespace loom::host
