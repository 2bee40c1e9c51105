// GLUE metrics; see glue_metrics.hpp.
#include "eval/glue_metrics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <string>

namespace loom::host {

ClassificationScores classification_scores(const std::vector<int32_t>& predicted,
                                           const std::vector<int32_t>& truth, int32_t num_classes) {
  if (predicted.size() != truth.size())
    throw std::invalid_argument("classification_scores: " + std::to_string(predicted.size()) +
                                " predictions for " + std::to_string(truth.size()) + " labels");
  const size_t k = static_cast<size_t>(std::max(num_classes, 2));
  std::vector<std::vector<double>> confusion(k, std::vector<double>(k, 0.0));  // [truth][predicted]
  for (size_t i = 0; i < truth.size(); ++i)
    if (truth[i] >= 0 && static_cast<size_t>(truth[i]) < k && predicted[i] >= 0 &&
        static_cast<size_t>(predicted[i]) < k)
      confusion[static_cast<size_t>(truth[i])][static_cast<size_t>(predicted[i])] += 1;
  double n = 0, correct = 0;
  std::vector<double> true_count(k, 0), predicted_count(k, 0);
  for (size_t t = 0; t < k; ++t)
    for (size_t p = 0; p < k; ++p) {
      n += confusion[t][p];
      true_count[t] += confusion[t][p];
      predicted_count[p] += confusion[t][p];
      if (t == p) correct += confusion[t][p];
    }
  ClassificationScores s;
  s.examples = static_cast<uint64_t>(n);
  if (n == 0) return s;
  s.accuracy = correct / n;
  // F1 = 2·tp / (2·tp + fp + fn) = 2·tp / (true + predicted members of the class).
  auto f1_of = [&](size_t c) {
    const double members = true_count[c] + predicted_count[c];
    return members == 0 ? 0.0 : 2 * confusion[c][c] / members;
  };
  if (k == 2) {
    s.f1 = f1_of(1);
  } else {
    // sklearn's macro average runs over the labels seen in the truth or the predictions.
    double sum = 0, present = 0;
    for (size_t c = 0; c < k; ++c)
      if (true_count[c] + predicted_count[c] > 0) sum += f1_of(c), present += 1;
    s.f1 = sum / present;
  }
  s.accuracy_f1 = (s.accuracy + s.f1) / 2;
  // Matthews correlation, multi-class form (Gorodkin 2004); the binary formula for k = 2.
  double sum_pt = 0, sum_p2 = 0, sum_t2 = 0;
  for (size_t c = 0; c < k; ++c) {
    sum_pt += predicted_count[c] * true_count[c];
    sum_p2 += predicted_count[c] * predicted_count[c];
    sum_t2 += true_count[c] * true_count[c];
  }
  const double spread = (n * n - sum_p2) * (n * n - sum_t2);
  s.mcc = spread == 0 ? 0.0 : (correct * n - sum_pt) / std::sqrt(spread);
  return s;
}

double pearson_correlation(const std::vector<double>& x, const std::vector<double>& y) {
  constexpr double kUndefined = std::numeric_limits<double>::quiet_NaN();
  const size_t n = x.size();
  if (n != y.size() || n < 2) return kUndefined;
  const double mean_x = std::accumulate(x.begin(), x.end(), 0.0) / static_cast<double>(n);
  const double mean_y = std::accumulate(y.begin(), y.end(), 0.0) / static_cast<double>(n);
  double sxy = 0, sxx = 0, syy = 0;
  for (size_t i = 0; i < n; ++i) {
    const double dx = x[i] - mean_x, dy = y[i] - mean_y;
    sxy += dx * dy;
    sxx += dx * dx;
    syy += dy * dy;
  }
  if (sxx == 0 || syy == 0) return kUndefined;
  return std::clamp(sxy / std::sqrt(sxx * syy), -1.0, 1.0);
}

std::vector<double> average_ranks(const std::vector<double>& values) {
  std::vector<size_t> order(values.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return values[a] < values[b]; });
  std::vector<double> ranks(values.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && values[order[j + 1]] == values[order[i]]) ++j;
    // Sorted positions i..j hold ranks i+1..j+1; each gets their mean.
    const double rank = static_cast<double>(i + j + 2) / 2.0;
    for (size_t p = i; p <= j; ++p) ranks[order[p]] = rank;
    i = j + 1;
  }
  return ranks;
}

RegressionScores regression_scores(const std::vector<double>& predicted, const std::vector<double>& truth) {
  if (predicted.size() != truth.size())
    throw std::invalid_argument("regression_scores: " + std::to_string(predicted.size()) +
                                " predictions for " + std::to_string(truth.size()) + " targets");
  RegressionScores s;
  s.examples = truth.size();
  s.pearson = pearson_correlation(predicted, truth);
  s.spearman = pearson_correlation(average_ranks(predicted), average_ranks(truth));
  s.pearson_spearman = (s.pearson + s.spearman) / 2;
  double squares = 0;
  for (size_t i = 0; i < truth.size(); ++i) squares += (predicted[i] - truth[i]) * (predicted[i] - truth[i]);
  s.mse =
      truth.empty() ? std::numeric_limits<double>::quiet_NaN() : squares / static_cast<double>(truth.size());
  return s;
}

}  // namespace loom::host
