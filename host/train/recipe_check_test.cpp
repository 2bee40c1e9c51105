// Whole-recipe validation against real plugins: every problem at once, with locations.
#include <gtest/gtest.h>

#include "train/recipe_check.hpp"
#include "plugin_loading/plugin_test_support.hpp"

namespace loom::host {
namespace {

std::string data(const std::string& name) {
  return std::string(LOOM_TEST_DATA_DIR) + "/" + name;
}

PluginRegistry core_registry() {
  return PluginRegistry(testing::hermetic({LOOM_PLUGIN_DIR}));
}

TEST(RecipeCheck, ValidRecipeHasNoProblems) {
  EXPECT_TRUE(check_recipe(load_recipe(data("valid.toml")), core_registry()).empty());
}

TEST(RecipeCheck, ThreeMistakesAreAllReportedWithLocations) {
  const std::string file = data("three_mistakes.toml");
  const auto problems = check_recipe(load_recipe(file), core_registry());
  ASSERT_EQ(problems.size(), 3u) << ::testing::PrintToString(problems);
  // Tables are visited in the order toml++ keeps them (sorted by key).
  std::string all;
  for (const auto& p : problems) all += p + "\n";
  EXPECT_NE(all.find(file + ":10:1: communicator.component: no component communicator/locl is available; did "
                            "you mean 'local'?"),
            std::string::npos)
      << all;
  EXPECT_NE(all.find(file + ":4:1: run.sed: unknown key; did you mean 'seed'?"), std::string::npos) << all;
  EXPECT_NE(all.find(file + ":7:1: train.steps: expected an integer, got string 'many'"), std::string::npos)
      << all;
}

TEST(RecipeCheck, UnknownTableGetsASuggestion) {
  const std::string file = data("unknown_table.toml");
  const auto problems = check_recipe(load_recipe(file), core_registry());
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0], file + ":4:1: unknown table [optimzer]; did you mean 'optimizer'?");
}

TEST(RecipeCheck, UnknownKeyFromOverrideNamesTheOverride) {
  Recipe recipe = load_recipe(data("valid.toml"), {"communicator.x=1"});
  const auto problems = check_recipe(recipe, core_registry());
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("--set communicator.x=1: communicator.x: unknown key"), std::string::npos)
      << problems[0];
}

}  // namespace
}  // namespace loom::host
