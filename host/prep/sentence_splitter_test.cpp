// The English sentence splitter: abbreviations, initials, decimals, quotes, paragraphs.
#include <gtest/gtest.h>

#include "prep/sentence_splitter.hpp"

using loom::host::split_sentences;
using Sentences = std::vector<std::string>;

TEST(SentenceSplitter, SplitsOnTerminalPunctuationBeforeCapitals) {
  EXPECT_EQ(split_sentences("Call me Ishmael. Some years ago I went to sea! Why? Because."),
            (Sentences{"Call me Ishmael.", "Some years ago I went to sea!", "Why?", "Because."}));
}

TEST(SentenceSplitter, KeepsAbbreviationsInitialsAndDottedWords) {
  EXPECT_EQ(split_sentences("Mr. Smith met Dr. Jones on Jan. 5 in the U.S. Capitol. J. Q. Adams spoke."),
            (Sentences{"Mr. Smith met Dr. Jones on Jan. 5 in the U.S. Capitol.", "J. Q. Adams spoke."}));
  EXPECT_EQ(split_sentences("Apples, pears, etc. Were on sale."),
            (Sentences{"Apples, pears, etc. Were on sale."}));
}

TEST(SentenceSplitter, NeverSplitsDecimalsOrBeforeLowerCase) {
  EXPECT_EQ(split_sentences("It grew 3.5 percent to $1.25 billion. Then it fell."),
            (Sentences{"It grew 3.5 percent to $1.25 billion.", "Then it fell."}));
  EXPECT_EQ(split_sentences("He said e.g. this. and went on... and on."),
            (Sentences{"He said e.g. this. and went on... and on."}));
}

TEST(SentenceSplitter, HandlesClosingQuotesAndOpeningQuotes) {
  EXPECT_EQ(split_sentences("\"Stop!\" he cried. \"Now.\" She left."),
            (Sentences{"\"Stop!\" he cried.", "\"Now.\"", "She left."}));
  EXPECT_EQ(split_sentences("It ended.\xE2\x80\x9D \xE2\x80\x9CNo, it did not.\xE2\x80\x9D"),
            (Sentences{"It ended.\xE2\x80\x9D", "\xE2\x80\x9CNo, it did not.\xE2\x80\x9D"}));
}

TEST(SentenceSplitter, ParagraphsEndSentencesAndWrappedLinesJoin) {
  EXPECT_EQ(split_sentences("CHAPTER 1\n\nLoomings\n\nCall me\nIshmael.  It was\ncold\n"),
            (Sentences{"CHAPTER 1", "Loomings", "Call me Ishmael.", "It was cold"}));
  EXPECT_EQ(split_sentences(" \n\n\t\n"), Sentences{});
}

TEST(SentenceSplitter, SplitsAfterNumbersAndBeforeDigits) {
  EXPECT_EQ(split_sentences("We grew in 1990. 2000 was better."),
            (Sentences{"We grew in 1990.", "2000 was better."}));
  EXPECT_EQ(split_sentences("See No. 5 and Vol. 2 of it."), (Sentences{"See No. 5 and Vol. 2 of it."}));
}
