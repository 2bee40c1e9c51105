// GLUE metrics against the values host/tests/data/glue_metrics_reference.py computes (its cases
// are the odd ones: ties, one class only, constant series, one example), and a few by hand.
#include "eval/glue_metrics.hpp"

#include <cmath>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace loom::host {
namespace {

nlohmann::json reference_cases() {
  const std::string path = std::string(LOOM_TEST_DATA_DIR) + "/glue_metrics_cases.json";
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  return nlohmann::json::parse(in);
}

// null in the reference file is NaN (SciPy's answer for an undefined correlation).
void expect_metric(const nlohmann::json& expected, double actual, const std::string& what) {
  if (expected.is_null()) {
    EXPECT_TRUE(std::isnan(actual)) << what << " = " << actual << ", expected NaN";
  } else {
    EXPECT_NEAR(actual, expected.get<double>(), 1e-12) << what;
  }
}

TEST(GlueMetrics, MatchThePythonReferenceOnEveryCase) {
  const nlohmann::json cases = reference_cases();
  size_t classification = 0, regression = 0;
  for (const nlohmann::json& c : cases) {
    const std::string name = c["name"];
    const nlohmann::json& expected = c["expected"];
    if (c["kind"] == "classification") {
      ++classification;
      const auto predicted = c["predicted"].get<std::vector<int32_t>>();
      const auto truth = c["truth"].get<std::vector<int32_t>>();
      const ClassificationScores s = classification_scores(predicted, truth, c["num_classes"].get<int32_t>());
      EXPECT_EQ(s.examples, truth.size()) << name;
      expect_metric(expected["accuracy"], s.accuracy, name + ": accuracy");
      expect_metric(expected["f1"], s.f1, name + ": f1");
      expect_metric(expected["mcc"], s.mcc, name + ": mcc");
      if (expected.contains("accuracy_f1"))
        expect_metric(expected["accuracy_f1"], s.accuracy_f1, name + ": acc+f1");
    } else {
      ++regression;
      const auto predicted = c["predicted"].get<std::vector<double>>();
      const auto truth = c["truth"].get<std::vector<double>>();
      const RegressionScores s = regression_scores(predicted, truth);
      EXPECT_EQ(s.examples, truth.size()) << name;
      expect_metric(expected["pearson"], s.pearson, name + ": pearson");
      expect_metric(expected["spearman"], s.spearman, name + ": spearman");
      expect_metric(expected["pearson_spearman"], s.pearson_spearman, name + ": mean");
      expect_metric(expected["mse"], s.mse, name + ": mse");
    }
  }
  EXPECT_GE(classification, 10u);
  EXPECT_GE(regression, 8u);
}

TEST(GlueMetrics, TiesShareTheirAverageRank) {
  EXPECT_EQ(average_ranks({3.0, 1.0, 3.0, 2.0}), (std::vector<double>{3.5, 1.0, 3.5, 2.0}));
  EXPECT_EQ(average_ranks({5.0, 5.0, 5.0}), (std::vector<double>{2.0, 2.0, 2.0}));
  EXPECT_TRUE(average_ranks({}).empty());
}

TEST(GlueMetrics, IgnoredAndOutOfRangeRowsAreNotCounted) {
  // Rows 1 (ignored label) and 3 (prediction outside the classes) drop out: 2 of 2 correct.
  const ClassificationScores s = classification_scores({1, 0, 0, 5}, {1, -1, 0, 1}, 2);
  EXPECT_EQ(s.examples, 2u);
  EXPECT_DOUBLE_EQ(s.accuracy, 1.0);
  const ClassificationScores none = classification_scores({}, {}, 2);
  EXPECT_EQ(none.examples, 0u);
  EXPECT_EQ(none.accuracy, 0.0);
  EXPECT_THROW(classification_scores({1}, {1, 0}, 2), std::invalid_argument);
  EXPECT_THROW(regression_scores({1.0}, {}), std::invalid_argument);
}

}  // namespace
}  // namespace loom::host
