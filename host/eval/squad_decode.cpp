// SQuAD decoding; see squad_decode.hpp. Scores are doubles of the float logits, summed as the
// reference sums its Python floats.
#include "eval/squad_decode.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "eval/squad_normalize.hpp"

namespace loom::host {
namespace {

// " ".join: appends `word` after a space unless `text` is empty.
void join_word(std::string& text, const std::string& word) {
  if (!text.empty()) text += ' ';
  text += word;
}

// Python's str.replace(pattern, "").
std::string replace_all(const std::string& text, const std::string& pattern) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, pattern.size(), pattern) == 0) {
      i += pattern.size();
    } else {
      out += text[i++];
    }
  }
  return out;
}

struct Candidate {
  std::string text;
  double start_logit = 0;
  double end_logit = 0;
  double score() const { return start_logit + end_logit; }
};

// The answer text of tokens [start, end] of `window`: WordPieces joined and "##" glued
// (tok_text), projected onto the original words (orig_text) by get_final_text.
std::string answer_text(const SquadQuestion& question, const SquadWindow& window, size_t start, size_t end,
                        const BasicTokenize& basic_tokenize) {
  std::string pieces;
  for (size_t i = start; i <= end; ++i) join_word(pieces, window.tokens[i]);
  // tok_text.replace(" ##", "").replace("##", ""): two passes (the first can join a "#" to a "#").
  const std::string glued = replace_all(replace_all(pieces, " ##"), "##");
  std::string tok_text;  // strip() and ' '.join(split())
  for (const std::u32string& word : python_split(utf8_to_code_points(glued)))
    join_word(tok_text, code_points_to_utf8(word));
  const auto first_word = static_cast<size_t>(window.token_to_word[start]);
  const auto last_word = static_cast<size_t>(window.token_to_word[end]);
  std::string orig_text;
  for (size_t w = first_word; w <= last_word && w < question.doc_words.size(); ++w)
    join_word(orig_text, question.doc_words[w]);
  return squad_final_text(tok_text, orig_text, basic_tokenize);
}

// _compute_softmax.
std::vector<double> softmax(const std::vector<double>& scores) {
  if (scores.empty()) return {};
  const double top = *std::max_element(scores.begin(), scores.end());
  std::vector<double> out;
  double total = 0.0;
  for (double s : scores) {
    out.push_back(std::exp(s - top));
    total += out.back();
  }
  for (double& p : out) p /= total;
  return out;
}

}  // namespace

std::vector<size_t> best_indices(const std::vector<float>& logits, size_t count, size_t n) {
  std::vector<size_t> order(std::min(count, logits.size()));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return logits[a] > logits[b]; });
  if (order.size() > n) order.resize(n);
  return order;
}

SquadAnswer decode_squad_question(const SquadQuestion& question, const SquadDecodeOptions& options,
                                  const BasicTokenize& basic_tokenize) {
  const auto n_best = static_cast<size_t>(options.n_best_size);
  std::vector<Candidate> candidates;
  double null_score = 0, null_start = 0, null_end = 0;
  bool have_null = false;
  for (const SquadWindow& window : question.windows) {
    const size_t length = window.tokens.size();
    if (window.token_to_word.size() != length || window.max_context.size() != length ||
        window.start_logits.size() < length || window.end_logits.size() < length)
      throw std::invalid_argument("question " + question.id +
                                  ": a window's tokens, maps and logits disagree in length");
    if (length == 0) continue;
    // The candidates are the window's own tokens: the reference also ranks its padding (to 384)
    // among the top n, which only ever displaces candidates; loom's padding varies with the batch.
    const std::vector<size_t> starts = best_indices(window.start_logits, length, n_best);
    const std::vector<size_t> ends = best_indices(window.end_logits, length, n_best);
    struct Prelim {
      size_t start, end;
      double start_logit, end_logit;
    };
    std::vector<Prelim> prelim;
    for (size_t s : starts)
      for (size_t e : ends) {
        if (window.token_to_word[s] < 0 || window.token_to_word[e] < 0) continue;
        if (window.max_context[s] == 0) continue;
        if (e < s || static_cast<int64_t>(e - s + 1) > options.max_answer_length) continue;
        prelim.push_back({s, e, window.start_logits[s], window.end_logits[e]});
      }
    std::stable_sort(prelim.begin(), prelim.end(), [](const Prelim& a, const Prelim& b) {
      return a.start_logit + a.end_logit > b.start_logit + b.end_logit;
    });
    if (options.version_2_with_negative) {
      const double score =
          static_cast<double>(window.start_logits[0]) + static_cast<double>(window.end_logits[0]);
      if (!have_null || score < null_score) {
        null_score = score, null_start = window.start_logits[0], null_end = window.end_logits[0];
        have_null = true;
      }
    }
    // The window's first n_best distinct texts (the reference dedupes within a window).
    std::vector<std::string> seen;
    size_t kept = 0;
    for (const Prelim& p : prelim) {
      if (kept == n_best) break;
      std::string text = p.start > 0 ? answer_text(question, window, p.start, p.end, basic_tokenize) : "";
      if (p.start > 0 && std::find(seen.begin(), seen.end(), text) != seen.end()) continue;
      seen.push_back(text);
      candidates.push_back({std::move(text), p.start_logit, p.end_logit});
      ++kept;
    }
  }
  if (options.version_2_with_negative && have_null) candidates.push_back({"", null_start, null_end});
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return a.score() > b.score(); });
  if (candidates.size() > n_best) candidates.resize(n_best);
  const bool has_non_empty =
      std::any_of(candidates.begin(), candidates.end(), [](const Candidate& c) { return !c.text.empty(); });
  // The reference's nonce for no candidate at all; for v2.0 also when only the null is left.
  if (candidates.empty() || (options.version_2_with_negative && !has_non_empty)) {
    candidates.push_back({"empty", 0.0, 0.0});
    std::stable_sort(candidates.begin(), candidates.end(),
                     [](const Candidate& a, const Candidate& b) { return a.score() > b.score(); });
  }

  SquadAnswer answer;
  std::vector<double> scores;
  scores.reserve(candidates.size());
  for (const Candidate& c : candidates) scores.push_back(c.score());
  const std::vector<double> probabilities = softmax(scores);
  const Candidate* best_non_null = nullptr;
  for (size_t i = 0; i < candidates.size(); ++i) {
    answer.nbest.push_back(
        {candidates[i].text, probabilities[i], candidates[i].start_logit, candidates[i].end_logit});
    if (best_non_null == nullptr && !candidates[i].text.empty()) best_non_null = &candidates[i];
  }
  if (options.version_2_with_negative) {
    const double diff =
        (have_null ? null_score : 0.0) - best_non_null->start_logit - best_non_null->end_logit;
    answer.null_score_diff = diff;
    answer.text = diff > options.null_score_diff_threshold ? "" : best_non_null->text;
  } else {
    answer.text = candidates.front().text;
  }
  return answer;
}

}  // namespace loom::host
