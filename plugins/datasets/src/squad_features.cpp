// SQuAD features; see squad_features.hpp.
#include "squad_features.hpp"

#include <algorithm>

#include "loom/sdk/error.hpp"

namespace loom_datasets {
namespace {

std::vector<int32_t> tokenize(const loom::Tokenizer& tokenizer, const std::string& text) {
  std::vector<int32_t> ids(text.size() + 1);
  size_t needed = tokenizer.tokenize(text.data(), text.size(), ids.data(), ids.size());
  if (needed > ids.size()) {
    ids.resize(needed);
    needed = tokenizer.tokenize(text.data(), text.size(), ids.data(), ids.size());
  }
  ids.resize(needed);
  return ids;
}

}  // namespace

std::vector<SquadFeature> squad_features(const std::vector<SquadExample>& examples,
                                         const SquadOptions& options, const loom::Tokenizer& tokenizer) {
  const loom::SpecialTokenIds special = tokenizer.special_token_ids();
  std::vector<SquadFeature> features;
  for (size_t e = 0; e < examples.size(); ++e) {
    const SquadExample& example = examples[e];
    std::vector<int32_t> query = tokenize(tokenizer, example.question);
    if (query.size() > static_cast<size_t>(options.max_query_length))
      query.resize(static_cast<size_t>(options.max_query_length));
    std::vector<int32_t> doc_tokens, token_to_word, word_to_token;
    for (size_t w = 0; w < example.doc_words.size(); ++w) {
      word_to_token.push_back(static_cast<int32_t>(doc_tokens.size()));
      for (int32_t id : tokenize(tokenizer, example.doc_words[w])) {
        token_to_word.push_back(static_cast<int32_t>(w));
        doc_tokens.push_back(id);
      }
    }
    int32_t answer_start = -1, answer_end = -1;
    if (options.training && !example.is_impossible) {
      answer_start = word_to_token[static_cast<size_t>(example.start_word)];
      answer_end = static_cast<size_t>(example.end_word) + 1 < example.doc_words.size()
                       ? word_to_token[static_cast<size_t>(example.end_word) + 1] - 1
                       : static_cast<int32_t>(doc_tokens.size()) - 1;
      // _improve_answer_span: the tightest token span equal to the tokenized answer text.
      const std::vector<int32_t> answer = tokenize(tokenizer, example.answer_text);
      bool improved = false;
      for (int32_t s = answer_start; s <= answer_end && !improved; ++s)
        for (int32_t t = answer_end; t >= s && !improved; --t)
          if (static_cast<size_t>(t) - static_cast<size_t>(s) + 1 == answer.size() &&
              std::equal(answer.begin(), answer.end(), doc_tokens.begin() + s))
            answer_start = s, answer_end = t, improved = true;
    }
    const int64_t max_tokens_for_doc = options.max_seq_length - static_cast<int64_t>(query.size()) - 3;
    if (max_tokens_for_doc <= 0)
      throw loom::ConfigError("data.max_query_length leaves no room for the context in max_seq_length");
    std::vector<std::pair<int64_t, int64_t>> spans;  // (start, length)
    for (int64_t start = 0; start < static_cast<int64_t>(doc_tokens.size());) {
      const int64_t length =
          std::min<int64_t>(static_cast<int64_t>(doc_tokens.size()) - start, max_tokens_for_doc);
      spans.emplace_back(start, length);
      if (start + length == static_cast<int64_t>(doc_tokens.size())) break;
      start += std::min<int64_t>(length, options.doc_stride);
    }
    for (size_t s = 0; s < spans.size(); ++s) {
      const auto [span_start, span_length] = spans[s];
      SquadFeature feature;
      feature.example = static_cast<uint32_t>(e);
      feature.span_index = static_cast<uint32_t>(s);
      feature.ids.push_back(special.cls);
      feature.ids.insert(feature.ids.end(), query.begin(), query.end());
      feature.ids.push_back(special.sep);
      feature.types.assign(feature.ids.size(), 0);
      feature.token_to_word.assign(feature.ids.size(), -1);
      feature.max_context.assign(feature.ids.size(), 0);
      for (int64_t i = 0; i < span_length; ++i) {
        const int64_t position = span_start + i;
        feature.ids.push_back(doc_tokens[static_cast<size_t>(position)]);
        feature.types.push_back(1);
        feature.token_to_word.push_back(token_to_word[static_cast<size_t>(position)]);
        // _check_is_max_context
        double best_score = -1;
        size_t best_span = 0;
        for (size_t o = 0; o < spans.size(); ++o) {
          const int64_t end = spans[o].first + spans[o].second - 1;
          if (position < spans[o].first || position > end) continue;
          const double score = static_cast<double>(std::min(position - spans[o].first, end - position)) +
                               0.01 * static_cast<double>(spans[o].second);
          if (score > best_score) best_score = score, best_span = o;
        }
        feature.max_context.push_back(best_span == s ? 1 : 0);
      }
      feature.ids.push_back(special.sep);
      feature.types.push_back(1);
      feature.token_to_word.push_back(-1);
      feature.max_context.push_back(0);
      if (answer_start >= 0 && answer_start >= span_start && answer_end <= span_start + span_length - 1) {
        const int64_t doc_offset = static_cast<int64_t>(query.size()) + 2;
        feature.start = static_cast<int32_t>(answer_start - span_start + doc_offset);
        feature.end = static_cast<int32_t>(answer_end - span_start + doc_offset);
      }
      features.push_back(std::move(feature));
    }
  }
  return features;
}

}  // namespace loom_datasets
