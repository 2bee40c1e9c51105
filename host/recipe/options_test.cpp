// The SDK's typed option reader, exercised directly.
#include <gtest/gtest.h>

#include "loom/sdk/options.hpp"

namespace {

loom::Options make(const std::string& toml, const std::string& origins = "") {
  return loom::Options(toml, origins, "r.toml:1:1", "optimizer");
}

TEST(Options, ReadsTypedValuesAndDefaults) {
  auto o = make("lr = 0.5\nsteps = 3\nname = \"x\"\nflag = true\nbetas = [0.9, 0.999]\nint_as_float = 2\n");
  EXPECT_DOUBLE_EQ(o.required<double>("lr"), 0.5);
  EXPECT_EQ(o.get<int64_t>("steps", 1), 3);
  EXPECT_EQ(o.get<std::string>("name", ""), "x");
  EXPECT_TRUE(o.get<bool>("flag", false));
  EXPECT_EQ(o.get<std::vector<double>>("betas", {}), (std::vector<double>{0.9, 0.999}));
  EXPECT_DOUBLE_EQ(o.get<double>("int_as_float", 0.0), 2.0);
  EXPECT_EQ(o.get<int>("absent", 7), 7);
  EXPECT_FALSE(o.optional<int>("absent2").has_value());
  EXPECT_NO_THROW(o.finish());
}

TEST(Options, WrongTypeNamesLocationKeyAndBothTypes) {
  auto o = make("lr = \"fast\"\n", "lr\tr.toml:4:6\n");
  o.get<double>("lr", 1.0);
  ASSERT_EQ(o.problems().size(), 1u);
  EXPECT_EQ(o.problems()[0], "r.toml:4:6: optimizer.lr: expected a number, got string 'fast'");
}

TEST(Options, MissingRequiredKeyPointsAtTheTable) {
  auto o = make("");
  o.required<double>("lr");
  ASSERT_EQ(o.problems().size(), 1u);
  EXPECT_EQ(o.problems()[0], "r.toml:1:1: optimizer.lr: missing required key");
}

TEST(Options, OutOfRangeValueIsReported) {
  auto o = make("beta = 1.5\n", "beta\tr.toml:2:1\n");
  EXPECT_DOUBLE_EQ(o.get<double>("beta", 0.9, loom::Range{0.0, 1.0}), 0.9);
  ASSERT_EQ(o.problems().size(), 1u);
  EXPECT_EQ(o.problems()[0], "r.toml:2:1: optimizer.beta: value 1.5 is out of range [0, 1]");
}

TEST(Options, IntegerOverflowForNarrowTypeIsReported) {
  auto o = make("n = 5000000000\n");
  o.get<int32_t>("n", 1);
  EXPECT_EQ(o.problems().size(), 1u);
}

TEST(Options, NegativeIntegersFitSignedTypesOnly) {
  auto o = make("n = -2\n", "n\tr.toml:1:5\n");
  EXPECT_EQ(o.get<int>("n", 0), -2);
  EXPECT_EQ(o.get<int64_t>("n", 0), -2);
  EXPECT_TRUE(o.problems().empty());
  EXPECT_EQ(o.get<int>("n", 7, loom::Range{0, 10}), 7);
  ASSERT_EQ(o.problems().size(), 1u);
  EXPECT_EQ(o.problems()[0], "r.toml:1:5: optimizer.n: value -2 is out of range [0, 10]");
  EXPECT_EQ(o.get<unsigned>("n", 3), 3u);  // no unsigned holds -2
  EXPECT_EQ(o.problems().size(), 2u);
}

TEST(Options, UnknownKeysGetSuggestionsAndFinishThrowsAllProblems) {
  auto o = make("lrr = 1.0\nweight_decay = \"x\"\n[nested]\nkey = 1\n");
  o.get<double>("lr", 1.0);
  o.get<double>("weight_decay", 0.0);
  try {
    o.finish();
    FAIL();
  } catch (const loom::ConfigError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("optimizer.weight_decay: expected a number"), std::string::npos) << message;
    EXPECT_NE(message.find("optimizer.lrr: unknown key; did you mean 'lr'?"), std::string::npos) << message;
    EXPECT_NE(message.find("optimizer.nested.key: unknown key"), std::string::npos) << message;
    EXPECT_EQ(e.status(), LOOM_E_INVALID_CONFIG);
  }
}

TEST(Options, SuggestionOnlyForCloseWords) {
  EXPECT_EQ(loom::Options::suggestion("optimzer", {"optimizer", "train"}), "; did you mean 'optimizer'?");
  EXPECT_EQ(loom::Options::suggestion("zzzzzz", {"optimizer", "train"}), "");
  EXPECT_EQ(loom::Options::edit_distance("kitten", "sitting"), 3u);
}

TEST(Options, ErrorBufferTruncatesWithEllipsis) {
  char text[10];
  loom_error_buffer buffer{text, sizeof(text)};
  loom::write_error(&buffer, "a very long message indeed");
  EXPECT_STREQ(text, "a very...");
  loom::write_error(&buffer, "short");
  EXPECT_STREQ(text, "short");
}

}  // namespace
