// Batches on their way to the blocks: JSON with Hugging Face names (debug-step's input) and the
// staging that derives labelled rows, normalised labels, clamped spans and non-[PAD] rows.
#include <gtest/gtest.h>

#include "block_harness.hpp"
#include "model/batch_json.hpp"
#include "model/batch_staging.hpp"

namespace loom_bert_test {
namespace {

std::string error_of(const char* text) {
  try {
    loom::host::batch_from_json(nlohmann::json::parse(text), "batch.json");
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

TEST(BatchJson, RefusesMalformedBatchesNamingTheKey) {
  EXPECT_EQ(error_of(R"({"token_type_ids": [[0]]})"), "batch.json: input_ids: missing required key");
  EXPECT_EQ(error_of(R"({"input_ids": [[1, 2], [3]]})"),
            "batch.json: input_ids[1]: 1 columns, expected 2 (rows must have equal length)");
  EXPECT_EQ(error_of(R"({"input_ids": [[1, 2]], "next_sentence_label": [0, 1]})"),
            "batch.json: next_sentence_label: expected an array of 1 integers (one per row)");
  EXPECT_EQ(error_of(R"({"input_ids": [[1, 2]], "label": [0]})"), "batch.json: unknown key 'label'");
  EXPECT_EQ(error_of(R"({"input_ids": [[1, 2.5]]})"),
            "batch.json: input_ids[0][1]: expected an integer, got 2.5");
}

TEST(BatchStaging, DerivesLabelledRowsNormalisedLabelsAndNonPadRows) {
  const auto batch = loom::host::batch_from_json(
      nlohmann::json::parse(
          R"({"input_ids": [[101, 7, 0], [101, 8, 9]], "attention_mask": [[1, 1, 0], [1, 1, 1]],
        "labels": [[-100, 5, -100], [-100, -100, 4]], "next_sentence_label": [1, -100],
        "start_positions": [9, -2], "end_positions": [1, 2]})"),
      "batch");
  EXPECT_EQ(batch.num_masked(), 2);
  loom::host::BatchStaging staging(cpu_backend(), {2, 3, 2});
  const loom::BatchView& v = staging.upload(batch.view());
  ASSERT_EQ(v.num_masked, 2);
  EXPECT_EQ(v.masked_rows.data_as<int32_t>()[0], 1);
  EXPECT_EQ(v.masked_rows.data_as<int32_t>()[1], 5);
  EXPECT_EQ(v.masked_labels.data_as<int32_t>()[1], 4);
  EXPECT_EQ(v.next_sentence_labels.data_as<int32_t>()[1], loom::kIgnoreIndex);
  EXPECT_EQ(v.start_positions.data_as<int32_t>()[0], 3) << "clamped to T = ignored";
  EXPECT_EQ(v.start_positions.data_as<int32_t>()[1], 0);
  EXPECT_EQ(v.attention_bias.data_as<float>()[2], loom::kMaskedKey);
  EXPECT_EQ(v.attention_bias.data_as<float>()[1], 0.0f);
  ASSERT_EQ(v.num_word_rows, 5) << "the [PAD] at (0, 2) sends no word-embedding gradient";
  EXPECT_EQ(v.word_rows.data_as<int32_t>()[2], 3);
  EXPECT_EQ(v.word_row_ids.data_as<int32_t>()[4], 9);
  EXPECT_THROW(staging.upload(loom::host::batch_from_json(
                                  nlohmann::json::parse(R"({"input_ids": [[1, 2, 3, 4]]})"), "wide")
                                  .view()),
               std::invalid_argument);
}

// Regression targets (num_labels = 1) reach the blocks as f32 labels, negative values included:
// only class indices are normalised to kIgnoreIndex.
TEST(BatchStaging, RegressionTargetsPassAsFloatLabels) {
  const int32_t ids[] = {3, 5, 3, 6};
  const int32_t class_labels[] = {-7, -7};  // ignored: targets take precedence
  const float targets[] = {-1.5f, 4.25f};
  loom::host::HostBatch batch;
  batch.batch = 2;
  batch.seq = 2;
  batch.input_ids = ids;
  batch.labels = class_labels;
  batch.targets = targets;
  loom::host::BatchStaging staging(cpu_backend(), {2, 2, 0});
  const loom::BatchView& v = staging.upload(batch);
  ASSERT_EQ(v.labels.dtype, loom::DType::f32);
  ASSERT_EQ(v.labels.numel(), 2);
  EXPECT_EQ(v.labels.data_as<float>()[0], -1.5f);
  EXPECT_EQ(v.labels.data_as<float>()[1], 4.25f);
  batch.targets = nullptr;
  const loom::BatchView& classes = staging.upload(batch);
  ASSERT_EQ(classes.labels.dtype, loom::DType::i32);
  EXPECT_EQ(classes.labels.data_as<int32_t>()[0], loom::kIgnoreIndex);
}

}  // namespace
}  // namespace loom_bert_test
