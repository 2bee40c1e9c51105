// Evaluation: one pass (or `max_batches`) of a dataset through the model without dropout, and the
// metrics of its task: pre-training → MLM loss (mean over masked tokens), MLM accuracy, NSP
// accuracy; classification → loss and the GLUE metrics (glue_metrics.hpp): accuracy, F1 (binary:
// class 1; multi-class: macro), Matthews correlation, and (accuracy + F1)/2 for two classes;
// regression (num_labels = 1) → Pearson, Spearman, their mean and the MSE. Also the per-batch
// accuracy helpers the trainer logs.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/batch_staging.hpp"
#include "model/host_batch_buffers.hpp"
#include "eval/masked_lm_breakdown.hpp"
#include "eval/squad_evaluation.hpp"
#include "model/model.hpp"
#include "loom/sdk/dataset.hpp"

namespace loom::host {

/// Correct / total predictions.
struct Tally {
  uint64_t correct = 0;
  uint64_t total = 0;
  double rate() const { return total == 0 ? 0.0 : static_cast<double>(correct) / static_cast<double>(total); }
};

/// Copies a (possibly row-strided) 2-D f32 device tensor into dense host rows.
std::vector<float> rows_to_host(loom::Backend& backend, const loom::Tensor& tensor);

/// The index of the largest value of each of `rows` rows of `logits` ([rows, classes] row-major).
std::vector<int32_t> argmax_rows(const std::vector<float>& logits, int64_t classes, size_t rows);

/// Argmax of each row of `logits` ([rows, classes] row-major) against `labels` (negative = skip).
Tally argmax_tally(const std::vector<float>& logits, int64_t classes, const std::vector<int32_t>& labels);

/// MLM accuracy of the last forward: the head's masked_prediction_correct (one i32 per labelled
/// position) when it has one and no `breakdown` is asked for, else masked_prediction_logits vs the
/// batch's labelled positions; also adds the batch to `breakdown` when one is given.
Tally masked_lm_tally(const Model& model, loom::Backend& backend, const HostBatch& batch,
                      MaskedLmBreakdown* breakdown = nullptr);
/// NSP accuracy of the last forward.
Tally next_sentence_tally(const Model& model, loom::Backend& backend, const HostBatch& batch);

/// Runs the evaluation; the dataset is rewound to its start first and left wherever it ends.
/// Keys are prefixed "eval_" (eval_mlm_loss, eval_mlm_accuracy, eval_nsp_accuracy, eval_loss,
/// eval_accuracy, eval_f1, eval_mcc, eval_accuracy_f1, eval_pearson, eval_spearman,
/// eval_pearson_spearman, eval_mse, eval_examples; an undefined correlation is NaN, JSON null).
/// With the tokenizer's `mask_token_id`, MLM metrics are also split by input category
/// (MaskedLmBreakdown: eval_mlm_mask_accuracy, ...).
/// Span extraction with `squad`: the answers are decoded, written and scored (SquadEvaluation:
/// eval_exact_match, eval_f1, ...).
nlohmann::json evaluate(Model& model, loom::Backend& backend, BatchStaging& staging, loom::Dataset& dataset,
                        HostBatchBuffers& buffers, uint64_t max_batches,
                        std::optional<int32_t> mask_token_id = std::nullopt, SquadEvaluation* squad = nullptr);

}  // namespace loom::host
