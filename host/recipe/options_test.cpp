// The SDK's typed option reader, exercised directly.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

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

// NaN compares false with every bound, so a range check written as `v < min || v > max` lets it
// through; every number option must refuse it (and ±inf) whatever its range, naming the range.
TEST(Options, NonFiniteNumbersAreRefusedWhateverTheRange) {
  auto o = make("beta = nan\nlr = inf\nfree = -inf\nlist = [0.5, nan]\n",
                "beta\tr.toml:1:1\nlr\tr.toml:2:1\nfree\tr.toml:3:1\nlist\tr.toml:4:1\n");
  EXPECT_DOUBLE_EQ(o.get<double>("beta", 0.9, loom::Range::closed_open(0.0, 1.0)), 0.9);
  EXPECT_DOUBLE_EQ(o.get<double>("lr", 1e-3, loom::Range::at_least(0.0)), 1e-3);
  EXPECT_DOUBLE_EQ(o.get<double>("free", 2.0), 2.0);
  EXPECT_EQ(o.get<std::vector<double>>("list", {}), std::vector<double>{});
  ASSERT_EQ(o.problems().size(), 4u);
  EXPECT_EQ(o.problems()[0],
            "r.toml:1:1: optimizer.beta: value nan is not a finite number (allowed: [0, 1))");
  EXPECT_EQ(o.problems()[1],
            "r.toml:2:1: optimizer.lr: value inf is not a finite number (allowed: [0, inf))");
  EXPECT_EQ(o.problems()[2], "r.toml:3:1: optimizer.free: value -inf is not a finite number");
  EXPECT_EQ(o.problems()[3], "r.toml:4:1: optimizer.list: element 2 is not a finite number");
}

// TOML itself refuses a literal beyond the double range, so `1e999` never becomes inf.
TEST(Options, OverflowingLiteralsAreNotValidToml) {
  auto o = make("lr = 1e999\n");
  ASSERT_EQ(o.problems().size(), 1u);
  EXPECT_NE(o.problems()[0].find("options are not valid TOML"), std::string::npos) << o.problems()[0];
}

TEST(Options, OpenBoundsExcludeTheirEnds) {
  auto o = make("beta = 1.0\neps = 0.0\nfactor = 1\nkeep = 0.0\n");
  EXPECT_DOUBLE_EQ(o.get<double>("beta", 0.9, loom::Range::closed_open(0.0, 1.0)), 0.9);
  EXPECT_DOUBLE_EQ(o.get<double>("eps", 1e-6, loom::Range::open_closed(0.0, 1.0)), 1e-6);
  EXPECT_DOUBLE_EQ(o.get<double>("factor", 2.0, loom::Range::above(1.0)), 2.0);
  EXPECT_DOUBLE_EQ(o.get<double>("keep", 0.5, loom::Range::closed_open(0.0, 1.0)), 0.0);
  ASSERT_EQ(o.problems().size(), 3u);
  EXPECT_EQ(o.problems()[0], "r.toml:1:1: optimizer.beta: value 1.0 is out of range [0, 1)");
  EXPECT_EQ(o.problems()[1], "r.toml:1:1: optimizer.eps: value 0.0 is out of range (0, 1]");
  EXPECT_EQ(o.problems()[2], "r.toml:1:1: optimizer.factor: value 1 is out of range (1, inf)");
  EXPECT_TRUE(loom::Range::open(0.0, 1.0).contains(0.5));
  EXPECT_FALSE(loom::Range::open(0.0, 1.0).contains(std::numeric_limits<double>::quiet_NaN()));
  EXPECT_EQ(loom::Range::open(0.0, 1.0).text(), "(0, 1)");
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
