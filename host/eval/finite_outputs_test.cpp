// Non-finite model outputs: refused naming the checkpoint and the row, or an evaluation's metrics
// withheld with the count of batches that had them.
#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "eval/finite_outputs.hpp"

namespace loom::host {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr float kInf = std::numeric_limits<float>::infinity();

std::string row_name(size_t row) {
  return "example " + std::to_string(row + 1) + " of in.tsv";
}

TEST(FiniteOutputs, FindsTheFirstNonFiniteValue) {
  EXPECT_FALSE(first_nonfinite(std::vector<float>{0.0f, -3.5f, 1e30f}));
  EXPECT_EQ(first_nonfinite(std::vector<float>{0.0f, kInf, kNaN}), 1u);
  EXPECT_EQ(first_nonfinite(std::vector<float>{-kInf}), 0u);
}

TEST(FiniteOutputs, FiniteOutputsPass) {
  EXPECT_NO_THROW(require_finite_outputs(std::vector<float>{1, 2, 3, 4}, 2, "logits", "ckpt", row_name));
}

TEST(FiniteOutputs, ANaNLogitIsRefusedNamingCheckpointOutputAndRow) {
  const std::vector<float> logits{0.1f, 0.2f, 0.3f, 0.4f, kNaN, 0.6f, kNaN, kNaN};  // rows of 2
  try {
    require_finite_outputs(logits, 2, "logits", "runs/x/checkpoints/step-000010", row_name);
    FAIL() << "NaN logits were accepted";
  } catch (const NonFiniteOutputError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("runs/x/checkpoints/step-000010: the model's logits are not finite", 0), 0u)
        << message;
    EXPECT_NE(message.find("3 of 8 in this batch, the first nan in example 3 of in.tsv"), std::string::npos)
        << message;
    EXPECT_NE(message.find("try an earlier checkpoint"), std::string::npos) << message;
  }
}

TEST(FiniteOutputs, MetricsOfNonFiniteBatchesAreWithheldButCountsStay) {
  nlohmann::json metrics{{"eval_loss", 0.5},    {"eval_accuracy", 0.0}, {"eval_f1", 0.0},
                         {"eval_examples", 64}, {"eval_batches", 2},    {"eval_masked_tokens", 7}};
  nlohmann::json untouched = metrics;
  withhold_nonfinite_metrics(untouched, 0);
  EXPECT_EQ(untouched, metrics);
  EXPECT_NO_THROW(refuse_nonfinite_evaluation(untouched, "ckpt"));

  withhold_nonfinite_metrics(metrics, 2);
  EXPECT_TRUE(metrics["eval_loss"].is_null());
  EXPECT_TRUE(metrics["eval_accuracy"].is_null());
  EXPECT_TRUE(metrics["eval_f1"].is_null());
  EXPECT_EQ(metrics["eval_examples"], 64);
  EXPECT_EQ(metrics["eval_batches"], 2);
  EXPECT_EQ(metrics["eval_masked_tokens"], 7);
  EXPECT_EQ(metrics["eval_nonfinite_batches"], 2);
  try {
    refuse_nonfinite_evaluation(metrics, "runs/x/checkpoints/step-000010");
    FAIL() << "withheld metrics were accepted";
  } catch (const NonFiniteOutputError& e) {
    EXPECT_NE(
        std::string(e.what()).find("runs/x/checkpoints/step-000010: the model's outputs are not finite on 2 "
                                   "of 2 evaluation batches"),
        std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace loom::host
