// GLUE metrics as the reference and Hugging Face's glue_compute_metrics get them from
// scikit-learn and SciPy: accuracy; F1 of class 1 (binary) or the macro mean over the classes
// present (more classes); (accuracy + F1)/2 (MRPC); Matthews correlation (CoLA); Pearson and
// Spearman correlation (STS-B; Spearman ranks ties by their average rank, as scipy.stats.spearmanr).
// Degenerate input gets those libraries' answers: F1 of a class with no true and no predicted
// member → 0 (sklearn's zero_division result); MCC with a constant truth or prediction → 0
// (sklearn); Pearson/Spearman of a constant series or of fewer than two pairs → NaN (SciPy),
// which JSON writes as null. host/tests/data/glue_metrics_reference.py computes the same in
// Python; glue_metrics_test.cpp compares.
#pragma once

#include <cstdint>
#include <vector>

namespace loom::host {

struct ClassificationScores {
  double accuracy = 0;     ///< 0 when there is no example
  double f1 = 0;           ///< binary: class 1; more classes: macro over the classes present
  double mcc = 0;          ///< Matthews correlation coefficient (multi-class form)
  double accuracy_f1 = 0;  ///< (accuracy + f1) / 2, MRPC's combined score
  uint64_t examples = 0;   ///< rows counted (truth in [0, num_classes))
};

/// Scores of predicted against true classes. Rows whose truth or prediction lies outside
/// [0, num_classes) are not counted (ignored labels are negative).
ClassificationScores classification_scores(const std::vector<int32_t>& predicted,
                                           const std::vector<int32_t>& truth, int32_t num_classes);

struct RegressionScores {
  double pearson = 0;           ///< NaN when undefined (see above)
  double spearman = 0;          ///< NaN when undefined
  double pearson_spearman = 0;  ///< (pearson + spearman) / 2, Hugging Face's "corr"
  double mse = 0;               ///< mean squared error; NaN without examples
  uint64_t examples = 0;
};

/// Scores of predicted against true real values (same length).
RegressionScores regression_scores(const std::vector<double>& predicted, const std::vector<double>& truth);

/// Pearson correlation; NaN when either series is constant or there are fewer than two pairs.
double pearson_correlation(const std::vector<double>& x, const std::vector<double>& y);

/// 1-based ranks, tied values sharing the mean of their ranks (scipy.stats.rankdata "average").
std::vector<double> average_ranks(const std::vector<double>& values);

}  // namespace loom::host
