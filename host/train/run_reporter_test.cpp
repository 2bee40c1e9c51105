// The run directory's copy of the recipe never holds the metrics stream's token.
#include <gtest/gtest.h>

#include <string>

#include "train/run_reporter.hpp"

namespace loom::host {
namespace {

TEST(ResolvedRecipeCopy, LeavesOutTheMetricsTokenAndKeepsEverythingElse) {
  const std::string recipe =
      "[run]\nname = \"a\"\n\n[metrics]\nlisten = \"127.0.0.1:0\"\ntoken = \"s3cret-t0ken\"\n";
  const std::string copy = without_metrics_token(recipe);
  EXPECT_EQ(copy.find("s3cret-t0ken"), std::string::npos) << copy;
  EXPECT_NE(copy.find("(set; not written here)"), std::string::npos) << copy;
  EXPECT_NE(copy.find("127.0.0.1:0"), std::string::npos) << copy;
  EXPECT_NE(copy.find("[run]"), std::string::npos) << copy;
}

TEST(ResolvedRecipeCopy, ARecipeWithoutATokenIsCopiedAsItIs) {
  const std::string recipe = "[run]\nname = \"a\"\n\n[metrics]\nlisten = \"127.0.0.1:0\"\n";
  EXPECT_EQ(without_metrics_token(recipe), recipe);
}

}  // namespace
}  // namespace loom::host
