// SQuAD decoding (squad_decode.hpp) and get_final_text (squad_final_text.hpp) at their odd cases:
// ties, spans outside the context or not at their max-context window, end before start, too long,
// repeated texts, several windows, the v2.0 null answer and its threshold, the nonce answer, and
// get_final_text's projection and fall-backs.
#include "eval/squad_decode.hpp"

#include <gtest/gtest.h>

#include <cctype>
#include <cmath>

namespace loom::host {
namespace {

// BasicTokenizer(do_lower_case=True) for ASCII: lower-case, punctuation split off, single spaces.
std::string ascii_basic_tokenize(const std::string& text) {
  std::string out;
  auto separate = [&] {
    if (!out.empty() && out.back() != ' ') out += ' ';
  };
  for (char c : text) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      separate();
    } else if (std::ispunct(static_cast<unsigned char>(c))) {
      separate();
      out += c;
      out += ' ';
    } else {
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

const BasicTokenize kBasic = ascii_basic_tokenize;

// A window over `words` (one WordPiece per word unless `pieces` says otherwise): [CLS] q [SEP]
// context [SEP]; logits 0 except those given.
SquadWindow window(const std::vector<std::string>& tokens, const std::vector<int32_t>& token_to_word,
                   std::vector<std::pair<size_t, float>> starts, std::vector<std::pair<size_t, float>> ends,
                   size_t padding = 3) {
  SquadWindow w;
  w.tokens = tokens;
  w.token_to_word = token_to_word;
  w.max_context.assign(tokens.size(), 0);
  for (size_t i = 0; i < tokens.size(); ++i) w.max_context[i] = token_to_word[i] >= 0 ? 1 : 0;
  w.start_logits.assign(tokens.size() + padding, -5.0f);
  w.end_logits.assign(tokens.size() + padding, -5.0f);
  for (auto [i, v] : starts) w.start_logits[i] = v;
  for (auto [i, v] : ends) w.end_logits[i] = v;
  return w;
}

// "Who drove?" over "Steve Smith's car": tokens [CLS] who drove ? [SEP] steve smith ' s car [SEP].
const std::vector<std::string> kTokens = {"[CLS]", "who", "drove", "?",   "[SEP]", "steve",
                                          "smith", "'",   "s",     "car", "[SEP]"};
const std::vector<int32_t> kMap = {-1, -1, -1, -1, -1, 0, 1, 1, 1, 2, -1};
const std::vector<std::string> kWords = {"Steve", "Smith's", "car"};

TEST(SquadFinalText, ProjectsOntoTheOriginalAndFallsBack) {
  EXPECT_EQ(squad_final_text("steve smith", "Steve Smith's", kBasic), "Steve Smith");
  EXPECT_EQ(squad_final_text("smith ' s", "Smith's", kBasic), "Smith's");
  EXPECT_EQ(squad_final_text("s", "Smith's", kBasic), "S");  // the first "s" of "smith ' s" is smith's
  EXPECT_EQ(squad_final_text("jones", "Steve Smith's", kBasic), "Steve Smith's");  // not found
  EXPECT_EQ(squad_final_text("[UNK]", "Steve", kBasic), "Steve");
  // Normalisation changed the number of characters: the whole original span.
  const BasicTokenize dropping = [](const std::string& t) { return ascii_basic_tokenize(t).substr(1); };
  EXPECT_EQ(squad_final_text("teve", "Steve Smith", dropping), "Steve Smith");
  // Code points, not bytes: "é" is one character on both sides.
  const BasicTokenize identity = [](const std::string& t) { return t; };
  EXPECT_EQ(squad_final_text("caf\xC3\xA9 noir", "le caf\xC3\xA9 noir", identity), "caf\xC3\xA9 noir");
}

TEST(SquadDecode, BestIndicesKeepTiesInPositionOrder) {
  const std::vector<float> logits = {1, 3, 3, 2, 3, 9};
  EXPECT_EQ(best_indices(logits, 6, 3), (std::vector<size_t>{5, 1, 2}));
  EXPECT_EQ(best_indices(logits, 5, 10), (std::vector<size_t>{1, 2, 4, 3, 0}));  // count limits it
}

TEST(SquadDecode, PicksTheBestValidSpanAndProjectsIt) {
  SquadQuestion q{"q", kWords, {window(kTokens, kMap, {{5, 4.0f}, {1, 9.0f}}, {{6, 3.0f}, {2, 9.0f}})}};
  // (1, 2) lies in the question; (5, 6) = "steve smith" → "Steve Smith" (get_final_text drops "'s").
  const SquadAnswer a = decode_squad_question(q, {}, kBasic);
  EXPECT_EQ(a.text, "Steve Smith");
  ASSERT_FALSE(a.nbest.empty());
  EXPECT_EQ(a.nbest[0].start_logit, 4.0);
  EXPECT_EQ(a.nbest[0].end_logit, 3.0);
  EXPECT_FALSE(a.null_score_diff.has_value());
  double total = 0;
  for (const auto& e : a.nbest) total += e.probability;
  EXPECT_NEAR(total, 1.0, 1e-12);
}

TEST(SquadDecode, RejectsEndBeforeStartTooLongAndNotMaxContext) {
  SquadDecodeOptions options;
  options.n_best_size = 2;
  options.max_answer_length = 2;
  // Best starts 9 (car), 6 (smith); best ends 5 (steve), 9 (car): (9,5) and (6,5) end before start,
  // (6,9) is 4 tokens long; (9,9) = "car" remains.
  SquadQuestion q{"q", kWords, {window(kTokens, kMap, {{9, 5.0f}, {6, 4.0f}}, {{5, 5.0f}, {9, 4.0f}})}};
  EXPECT_EQ(decode_squad_question(q, options, kBasic).text, "car");
  // Not "car"'s max-context window either: nothing is left, the nonce answer "empty" (logits 0).
  q.windows[0].max_context[9] = 0;
  const SquadAnswer a = decode_squad_question(q, options, kBasic);
  EXPECT_EQ(a.text, "empty");
  ASSERT_EQ(a.nbest.size(), 1u);
  EXPECT_EQ(a.nbest[0].probability, 1.0);
}

TEST(SquadDecode, DeduplicatesTextsWithinAWindowNotAcrossWindows) {
  // "cat cat": spans (5,5) and (6,6) are both "cat"; the second is dropped within the window.
  const std::vector<std::string> tokens = {"[CLS]", "q", "[SEP]", "[SEP]", "[SEP]", "cat", "cat", "[SEP]"};
  const std::vector<int32_t> map = {-1, -1, -1, -1, -1, 0, 1, -1};
  SquadQuestion q{"q", {"cat", "cat"}, {window(tokens, map, {{5, 2.0f}, {6, 1.0f}}, {{5, 2.0f}, {6, 1.0f}})}};
  SquadDecodeOptions options;
  options.n_best_size = 3;
  SquadAnswer a = decode_squad_question(q, options, kBasic);
  std::vector<std::string> texts;
  for (const auto& e : a.nbest) texts.push_back(e.text);
  EXPECT_EQ(texts, (std::vector<std::string>{"cat", "cat cat"}));  // (5,5), then (5,6); (6,6) dropped
  // The same text from a second window stays (the reference dedupes per window only).
  q.windows.push_back(q.windows[0]);
  a = decode_squad_question(q, options, kBasic);
  ASSERT_EQ(a.nbest.size(), 3u);
  EXPECT_EQ(a.nbest[0].text, "cat");
  EXPECT_EQ(a.nbest[1].text, "cat");
  EXPECT_DOUBLE_EQ(a.nbest[0].probability, a.nbest[1].probability);
}

TEST(SquadDecode, GluesWordPiecesBeforeProjecting) {
  const std::vector<std::string> tokens = {"[CLS]",    "q",      "[SEP]", "un",
                                           "##believ", "##able", "news",  "[SEP]"};
  const std::vector<int32_t> map = {-1, -1, -1, 0, 0, 0, 1, -1};
  SquadQuestion q{"q", {"Unbelievable!", "News"}, {window(tokens, map, {{3, 3.0f}}, {{5, 3.0f}})}};
  EXPECT_EQ(decode_squad_question(q, {}, kBasic).text, "Unbelievable");
}

TEST(SquadDecode, VersionTwoNullScoreAndThreshold) {
  SquadDecodeOptions options;
  options.version_2_with_negative = true;
  // Two windows: null scores 1+1 = 2 and 0.5+0.5 = 1; the smaller one (1) is the null score.
  SquadWindow first = window(kTokens, kMap, {{0, 1.0f}, {9, 2.0f}}, {{0, 1.0f}, {9, 1.5f}});
  SquadWindow second = window(kTokens, kMap, {{0, 0.5f}, {5, 0.2f}}, {{0, 0.5f}, {5, 0.1f}});
  SquadQuestion q{"q", kWords, {first, second}};
  SquadAnswer a = decode_squad_question(q, options, kBasic);
  ASSERT_TRUE(a.null_score_diff.has_value());
  EXPECT_DOUBLE_EQ(*a.null_score_diff, 1.0 - 2.0 - 1.5);  // null − best non-null ("car", 3.5)
  EXPECT_EQ(a.text, "car");
  // The null entry is in the n-best, with the null window's logits.
  bool null_seen = false;
  for (const auto& e : a.nbest)
    if (e.text.empty()) null_seen = e.start_logit == 0.5 && e.end_logit == 0.5;
  EXPECT_TRUE(null_seen);
  options.null_score_diff_threshold = -3.0;  // −2.5 > −3: predict no answer
  EXPECT_EQ(decode_squad_question(q, options, kBasic).text, "");
}

TEST(SquadDecode, VersionTwoWithOnlyTheNullGetsTheNonce) {
  SquadDecodeOptions options;
  options.version_2_with_negative = true;
  SquadWindow w = window(kTokens, kMap, {{0, 4.0f}}, {{0, 4.0f}});
  w.max_context.assign(w.tokens.size(), 0);  // no valid span at all
  const SquadAnswer a = decode_squad_question({"q", kWords, {w}}, options, kBasic);
  ASSERT_EQ(a.nbest.size(), 2u);
  EXPECT_EQ(a.nbest[0].text, "");       // null, score 8
  EXPECT_EQ(a.nbest[1].text, "empty");  // nonce, score 0
  EXPECT_DOUBLE_EQ(*a.null_score_diff, 8.0);
  EXPECT_EQ(a.text, "");
}

TEST(SquadDecode, SoftmaxOverTheNbestScores) {
  SquadDecodeOptions options;
  options.n_best_size = 2;
  SquadQuestion q{"q", kWords, {window(kTokens, kMap, {{5, 2.0f}, {9, 1.0f}}, {{9, 1.0f}, {5, 0.5f}})}};
  // Starts 5, 9 × ends 9, 5: (5,9) = 3, (5,5) = 2.5, (9,9) = 2 → the best two: 3 and 2.5.
  const SquadAnswer a = decode_squad_question(q, options, kBasic);
  ASSERT_EQ(a.nbest.size(), 2u);
  EXPECT_EQ(a.nbest[0].text, "Steve Smith's car");
  EXPECT_EQ(a.nbest[1].text, "Steve");
  EXPECT_DOUBLE_EQ(a.nbest[0].probability, 1.0 / (1.0 + std::exp(-0.5)));
}

TEST(SquadDecode, InconsistentWindowIsAnError) {
  SquadWindow w = window(kTokens, kMap, {}, {});
  w.token_to_word.pop_back();
  EXPECT_THROW(decode_squad_question({"q", kWords, {w}}, {}, kBasic), std::invalid_argument);
}

}  // namespace
}  // namespace loom::host
