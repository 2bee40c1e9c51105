// Vocabulary loading (transformers' load_vocab rules) and lookups.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "loom/sdk/error.hpp"
#include "wordpiece_test_support.hpp"

namespace loom::wordpiece::testing {
namespace {

TEST(Vocabulary, RealBertVocabularyHasTheStandardLayout) {
  const Vocabulary& v = uncased_vocabulary();
  EXPECT_EQ(v.size(), 30522);
  EXPECT_STREQ(v.token(0), "[PAD]");
  EXPECT_STREQ(v.token(1), "[unused0]");
  EXPECT_EQ(v.find("[UNK]"), 100);
  EXPECT_EQ(v.find("[CLS]"), 101);
  EXPECT_EQ(v.find("[SEP]"), 102);
  EXPECT_EQ(v.find("[MASK]"), 103);
  EXPECT_EQ(v.find("the"), 1996);
  EXPECT_EQ(v.find("##s"), 2015);
  EXPECT_EQ(v.find_continuation("s"), 2015);
  EXPECT_EQ(v.find_initial("s"), v.find("s"));
  EXPECT_TRUE(v.is_continuation(2015));
  EXPECT_FALSE(v.is_continuation(1996));
  EXPECT_EQ(v.find("no-such-token"), -1);
  EXPECT_EQ(v.token(30522), nullptr);
  EXPECT_EQ(v.token(-1), nullptr);
}

TEST(Vocabulary, CrlfLinesAndDuplicatesFollowLoadVocab) {
  const std::string path = ::testing::TempDir() + "/crlf_vocab.txt";
  {
    std::ofstream out(path, std::ios::binary);
    out << "[PAD]\r\n[UNK]\r\nhello\r\n##lo\r\nhello\r\n";
  }
  const Vocabulary v = Vocabulary::load(path);
  EXPECT_EQ(v.size(), 5);
  EXPECT_EQ(v.find("hello"), 4);  // the later duplicate wins
  EXPECT_EQ(v.find("##lo"), 3);
  std::remove(path.c_str());
}

TEST(Vocabulary, MissingOrEmptyFileIsAnErrorNamingIt) {
  try {
    Vocabulary::load("/nonexistent/vocab.txt");
    FAIL() << "expected IoError";
  } catch (const loom::IoError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/vocab.txt"), std::string::npos);
  }
  const std::string path = ::testing::TempDir() + "/empty_vocab.txt";
  { std::ofstream out(path); }
  EXPECT_THROW(Vocabulary::load(path), loom::IoError);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace loom::wordpiece::testing
