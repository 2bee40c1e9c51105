// Recipe loading: syntax errors, includes, cycles, overrides, origins, round trip.
#include <gtest/gtest.h>

#include "recipe/errors.hpp"
#include "recipe/recipe.hpp"

namespace loom::host {
namespace {

std::string data(const std::string& name) {
  return std::string(LOOM_TEST_DATA_DIR) + "/" + name;
}

// Returns the problems of loading `file` with `overrides`; fails the test when it loads.
std::vector<std::string> load_problems(const std::string& file,
                                       const std::vector<std::string>& overrides = {}) {
  try {
    load_recipe(data(file), overrides);
  } catch (const RecipeError& e) {
    return e.problems();
  }
  ADD_FAILURE() << file << " loaded without error";
  return {};
}

TEST(Recipe, SyntaxErrorNamesFileLineAndColumn) {
  const auto problems = load_problems("syntax_error.toml");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].rfind(data("syntax_error.toml") + ":2:", 0), 0u) << problems[0];
  EXPECT_NE(problems[0].find("syntax error"), std::string::npos) << problems[0];
}

TEST(Recipe, MissingFileIsReported) {
  const auto problems = load_problems("does_not_exist.toml");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("recipe file not found"), std::string::npos);
}

TEST(Recipe, IncludeMergesAndTheIncludingFileWins) {
  Recipe recipe = load_recipe(data("derived.toml"));
  EXPECT_EQ(recipe.table()["run"]["name"].value<std::string>(), "derived");
  EXPECT_EQ(recipe.table()["run"]["seed"].value<int64_t>(), 1);
  EXPECT_EQ(recipe.table()["train"]["steps"].value<int64_t>(), 5);
  EXPECT_EQ(recipe.table()["train"]["log_every"].value<int64_t>(), 10);
  EXPECT_FALSE(recipe.table().contains("include"));
  EXPECT_EQ(recipe.origin("run.name"), data("derived.toml") + ":4:1");
  EXPECT_EQ(recipe.origin("run.seed"), data("base.toml") + ":4:1");
}

TEST(Recipe, IncludeCycleIsReportedWithTheChain) {
  const auto problems = load_problems("cycle_a.toml");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("include cycle:"), std::string::npos) << problems[0];
  EXPECT_NE(problems[0].find("cycle_a.toml -> "), std::string::npos) << problems[0];
  EXPECT_NE(problems[0].find("cycle_b.toml -> "), std::string::npos) << problems[0];
}

TEST(Recipe, OverrideReplacesValueAndRecordsItsOrigin) {
  Recipe recipe = load_recipe(data("valid.toml"), {"train.steps=99", "run.name=other", "run.seed=7"});
  EXPECT_EQ(recipe.table()["train"]["steps"].value<int64_t>(), 99);
  EXPECT_EQ(recipe.table()["run"]["name"].value<std::string>(), "other");
  EXPECT_EQ(recipe.origin("train.steps"), "--set train.steps=99");
}

TEST(Recipe, OverrideOfFloatAcceptsAnInteger) {
  Recipe recipe = load_recipe(data("valid.toml"), {"train.lr=0.5"});
  recipe.apply_override("train.lr=1");
  EXPECT_EQ(recipe.table()["train"]["lr"].value<double>(), 1.0);
}

TEST(Recipe, OverrideOnMissingTableIsAnErrorWithSuggestion) {
  const auto problems = load_problems("valid.toml", {"trian.steps=3"});
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0], "--set trian.steps=3: the recipe has no table 'trian'; did you mean 'train'?");
}

TEST(Recipe, OverrideWithWrongTypeIsAnError) {
  const auto problems = load_problems("valid.toml", {"train.steps=abc", "run.seed=1.5"});
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_NE(
      problems[0].find("--set train.steps=abc: 'abc' is not a valid value; train.steps expects an integer"),
      std::string::npos)
      << problems[0];
  EXPECT_NE(problems[1].find("run.seed expects an integer like the recipe's value at"), std::string::npos)
      << problems[1];
  EXPECT_NE(problems[1].find("got a number"), std::string::npos) << problems[1];
}

TEST(Recipe, OverrideWithoutEqualsIsAnError) {
  const auto problems = load_problems("valid.toml", {"train.steps"});
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("expected KEY=VALUE"), std::string::npos);
}

TEST(Recipe, KeysThatAreNotBareAreRefusedWhereTheyCameFrom) {
  // A quoted key names nothing Loom reads, and one with a single quote would not survive
  // recipe.resolved.toml (written unquoted): from a file, an inline table or --set, each is named.
  const auto problems = load_problems("quoted_keys.toml", {"train'''eps=10"});
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_EQ(problems[0], data("quoted_keys.toml") + ":9:1: the key \"it's\" is not one Loom reads: recipe keys are "
                                                    "letters, digits, '_' and '-'");
  EXPECT_EQ(problems[1].rfind(data("quoted_keys.toml") + ":5:1: the key \"log every\"", 0), 0u) << problems[1];
  EXPECT_EQ(problems[2].rfind("--set train'''eps=10: the key \"train'''eps\"", 0), 0u) << problems[2];
}

TEST(Recipe, ResolvedRecipeRoundTripsThroughToml) {
  Recipe recipe = load_recipe(data("derived.toml"), {"train.steps=3"});
  toml::table reparsed = toml::parse(recipe.to_toml());
  EXPECT_EQ(reparsed, recipe.table());
}

TEST(Recipe, ComponentConfigStripsTheSelectorAndKeepsOrigins) {
  Recipe recipe = load_recipe(data("base.toml"));
  const ComponentConfig config = recipe.component_config("train");
  EXPECT_EQ(config.table_origin, data("base.toml") + ":9:1");
  EXPECT_NE(config.origins.find("steps\t" + data("base.toml") + ":10:1"), std::string::npos)
      << config.origins;
  const ComponentConfig comm = recipe.component_config("communicator");
  EXPECT_EQ(comm.toml.find("component"), std::string::npos);
}

TEST(Recipe, ComponentConfigOfAnInlineTableIsATomlDocument) {
  Recipe recipe = load_recipe(data("inline_table.toml"));
  const ComponentConfig config = recipe.component_config("masking");
  const toml::table reparsed = toml::parse(config.toml);
  EXPECT_EQ(reparsed["a"].value<int64_t>(), 1) << config.toml;
}

}  // namespace
}  // namespace loom::host
