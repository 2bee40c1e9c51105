// Every BasicTokenizer / WordPiece rule of Hugging Face BertTokenizer, against the real
// bert-base-uncased vocabulary. Expected values follow transformers' tokenization_bert.py.
#include <gtest/gtest.h>

#include "wordpiece_test_support.hpp"

namespace loom::wordpiece::testing {
namespace {

TEST(BasicTokenizer, LowerCasesAndStripsAccents) {
  EXPECT_EQ(tokens_of("Héllò hôw are ü?"), (Tokens{"hello", "how", "are", "u", "?"}));
  // Decomposed input (e + U+0301) normalises to the same thing.
  EXPECT_EQ(tokens_of("He\u0301llo\u0300"), (Tokens{"hello"}));
  // Ligatures and compatibility forms are NOT folded (NFD is canonical only): "ﬁ" stays.
  EXPECT_EQ(words_of(uncased(), "\uFB01ne"), "\uFB01ne");
}

TEST(BasicTokenizer, LowerCasesCodePointByCodePointLikeHuggingFace) {
  // Capital sigma is always σ: Hugging Face lower-cases per code point, so the final-sigma rule
  // of full Unicode lower-casing never applies (docs/decisions/tokenizer-semantics.md: `ΟΔΟΣ` → ο ##δ ##ο ##σ there).
  EXPECT_EQ(words_of(uncased(), "ΟΔΟΣ"), "οδοσ");
  EXPECT_EQ(words_of(uncased(), "ΣΑ"), "σα");
  EXPECT_EQ(words_of(uncased(), "ΑΣ.Β"), "ασ . β");
  EXPECT_EQ(words_of(uncased(), "ΑΣ. Β"), "ασ . β");
  EXPECT_EQ(words_of(uncased(), "ΣΣΣΣ"), "σσσσ");
  EXPECT_EQ(words_of(uncased(), "ς"), "ς");                // a final sigma in the input stays one
  EXPECT_EQ(words_of(uncased(), "İstanbul"), "istanbul");  // U+0130 → i + U+0307, then stripped
  EXPECT_EQ(tokens_of("ΟΔΟΣ"), (Tokens{"ο", "##δ", "##ο", "##σ"}));
}

TEST(BasicTokenizer, SplitsEveryCjkIdeographButNotKanaOrHangul) {
  EXPECT_EQ(words_of(uncased(), "ab中文cd"), "ab 中 文 cd");
  EXPECT_EQ(tokens_of("中文"), (Tokens{"中", "文"}));
  // Not split; but NFD accent stripping decomposes Hangul syllables into jamo and drops the
  // dakuten of が (U+3099 is Mn), exactly as Python's unicodedata does.
  EXPECT_EQ(words_of(uncased(), "ひらがな 한국어"),
            "ひらかな \u1112\u1161\u11AB\u1100\u116E\u11A8\u110B\u1165");
  EXPECT_EQ(words_of(uncased(), "\U00020000x"), "\U00020000 x");  // extension B
  // A compatibility ideograph is split, then NFC maps it to the unified one (U+F900 → U+8C48).
  EXPECT_EQ(words_of(uncased(), "a\uF900b"), "a \u8C48 b");
}

TEST(BasicTokenizer, CleansControlCharactersWithoutSplitting) {
  EXPECT_EQ(words_of(uncased(), std::string("a\0b", 3)), "ab");
  EXPECT_EQ(words_of(uncased(),
                     "a\u200Bb\u00ADc\x07"
                     "d\x7F"
                     "e\u0085f\uFFFDg"),
            "abcdefg");                              // Cf, Cc, U+FFFD
  EXPECT_EQ(words_of(uncased(), "a\uE000b"), "ab");  // private use (Co) is "control" too
  // Unassigned (Cn) too: Python's category() says "Cn". (The Rust fast tokenizer keeps such code
  // points, giving [UNK]; a SpamAssassin line has one: docs/decisions/tokenizer-semantics.md.)
  EXPECT_EQ(words_of(uncased(), "i\U000B0E39g"), "ig");
}

TEST(BasicTokenizer, TreatsTabsNewlinesAndUnicodeSpacesAsWhitespace) {
  EXPECT_EQ(words_of(uncased(), " a\tb\nc\r\nd\u00A0e\u3000f\u2028g\u2029h  "), "a b c d e f g h");
  EXPECT_EQ(words_of(uncased(), " \t\n "), "");
  EXPECT_TRUE(tokens_of("").empty());
}

TEST(BasicTokenizer, SplitsAsciiSymbolsAndUnicodePunctuation) {
  // ASCII 33-47, 58-64, 91-96, 123-126 are punctuation even where Unicode says symbol ($ ^ ` ~ + < = > |).
  EXPECT_EQ(words_of(uncased(), "a$b^c`d~e+f<g=h>i|j"), "a $ b ^ c ` d ~ e + f < g = h > i | j");
  EXPECT_EQ(tokens_of("a$b"), (Tokens{"a", "$", "b"}));
  // Unicode P*: dashes, inverted question mark, guillemets, CJK full stop.
  EXPECT_EQ(words_of(uncased(), "x—y¿z«w»v。u"), "x — y ¿ z « w » v 。 u");
  // Non-ASCII symbols (S*) are not punctuation: they stay inside the word.
  EXPECT_EQ(words_of(uncased(), "5€ ©2020 90°"), "5€ ©2020 90°");
  // U+1FEF GREEK VARIA (Sk) normalises to '`', which then splits.
  EXPECT_EQ(words_of(uncased(), "a\u1FEFb"), "a ` b");
  EXPECT_EQ(tokens_of("don't"), (Tokens{"don", "'", "t"}));
}

TEST(BasicTokenizer, KeepsSpecialTokensWholeAnywhereInTheText) {
  const auto& t = uncased();
  const std::string text = "[CLS] hello[SEP]world [MASK]";
  EXPECT_EQ(t.tokenize_to_vector(text.data(), text.size()),
            (std::vector<int32_t>{101, 7592, 102, 2088, 103}));
  // Only the exact spelling is special; lower case goes through the normal path.
  const Tokens lower = tokens_of("[sep]");
  EXPECT_EQ(lower, (Tokens{"[", "sep", "]"}));
  // split_special_tokens = true treats them as text.
  const WordpieceTokenizer split = make_tokenizer(uncased_vocabulary(), true, true);
  EXPECT_EQ(tokens_of(split, "[SEP]"), (Tokens{"[", "sep", "]"}));
  EXPECT_EQ(words_of(uncased(), "x[PAD]"), "x [PAD]");
}

TEST(WordPiece, GreedyLongestMatchFirstWithContinuations) {
  EXPECT_EQ(tokens_of("hello world"), (Tokens{"hello", "world"}));
  const Tokens pieces = tokens_of("unaffable");
  ASSERT_GE(pieces.size(), 2u);
  EXPECT_EQ(pieces.front(), "una");  // the longest vocabulary prefix of "unaffable"
  for (size_t i = 1; i < pieces.size(); ++i) EXPECT_EQ(pieces[i].rfind("##", 0), 0u) << pieces[i];
  EXPECT_EQ(tokens_of("aaa"), (Tokens{"aaa"}));
  EXPECT_EQ(tokens_of("aaaaa"), (Tokens{"aaa", "##aa"}));
}

TEST(WordPiece, AWordWithAnUnmatchablePieceIsOneUnk) {
  EXPECT_EQ(tokens_of("ab☃cd"), (Tokens{"[UNK]"}));  // ☃ is not in the vocabulary
  EXPECT_EQ(tokens_of("ok ☃ ok"), (Tokens{"ok", "[UNK]", "ok"}));
}

TEST(WordPiece, PiecesOverOneHundredCodePointsAreUnk) {
  EXPECT_NE(tokens_of(std::string(100, 'a')), (Tokens{"[UNK]"}));
  EXPECT_EQ(tokens_of(std::string(101, 'a')), (Tokens{"[UNK]"}));
  // The limit counts code points after normalisation: 100 × "é" (200 bytes) is fine.
  std::string accented;
  for (int i = 0; i < 100; ++i) accented += "é";
  EXPECT_NE(tokens_of(accented), (Tokens{"[UNK]"}));
  EXPECT_EQ(tokens_of(accented + "é"), (Tokens{"[UNK]"}));
  // It applies per punctuation-split piece.
  const Tokens two = tokens_of(std::string(60, 'a') + "," + std::string(60, 'a'));
  EXPECT_EQ(std::count(two.begin(), two.end(), "[UNK]"), 0);
}

TEST(Utf8, InvalidBytesAreReplacedCountedAndDropped) {
  const WordpieceTokenizer t = make_tokenizer(uncased_vocabulary());
  char words[64];
  const std::string one =
      "ab\xFF"
      "cd";
  ASSERT_EQ(t.pre_tokenize(one.data(), one.size(), words, sizeof(words)), 4u);
  EXPECT_STREQ(words, "abcd");  // U+FFFD is removed by clean-up, not a split
  EXPECT_EQ(t.invalid_utf8_replacements(), 1u);
  const std::string many = "\xC0\xAF x \xED\xA0\x80 y \xF4\x90\x80\x80 z \xE2\x82";
  ASSERT_EQ(t.pre_tokenize(many.data(), many.size(), words, sizeof(words)), 5u);
  EXPECT_STREQ(words, "x y z");
  EXPECT_EQ(t.invalid_utf8_replacements(), 1u + 2 + 3 + 4 + 1);
}

TEST(BasicTokenizer, CasedKeepsCaseAndAccentsButAppliesNfc) {
  const Vocabulary vocabulary = Vocabulary::from_tokens(
      {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "H\u00E9llo", "hello", "World", "##s", "!"});
  const WordpieceTokenizer cased = make_tokenizer(vocabulary, /*lower_case=*/false);
  EXPECT_EQ(tokens_of(cased, "He\u0301llo Worlds!"), (Tokens{"H\u00E9llo", "World", "##s", "!"}));
  EXPECT_EQ(tokens_of(cased, "HELLO"), (Tokens{"[UNK]"}));
  EXPECT_FALSE(cased.lower_case());
}

}  // namespace
}  // namespace loom::wordpiece::testing
