// Evaluation passes and accuracy helpers; see evaluator.hpp.
#include "eval/evaluator.hpp"

#include <algorithm>
#include <cmath>
#include <span>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "eval/batch_rows.hpp"
#include "eval/finite_outputs.hpp"
#include "eval/glue_metrics.hpp"
#include "model/host_mirror.hpp"
#include "recipe/errors.hpp"

namespace loom::host {

std::vector<float> rows_to_host(loom::Backend& backend, const loom::Tensor& tensor) {
  if (!tensor.defined() || tensor.ndim != 2 || tensor.dtype != loom::DType::f32)
    throw std::invalid_argument("rows_to_host: expected a defined f32 [rows, cols] tensor, got " +
                                tensor.describe());
  const int64_t rows = tensor.shape[0], cols = tensor.shape[1];
  std::vector<float> host(static_cast<size_t>(rows * cols));
  if (tensor.is_contiguous()) {
    backend.copy_to_host(host.data(), tensor.data, host.size() * sizeof(float));
    return host;
  }
  if (tensor.strides[1] != 1 || tensor.strides[0] < cols)
    throw std::invalid_argument("rows_to_host: rows must not overlap and columns must be contiguous");
  // One copy of the whole strided span (on a GPU every copy waits for the device), then the
  // rows are packed on the host.
  const auto stride = static_cast<size_t>(tensor.strides[0]);
  std::vector<float> span(rows == 0 ? 0 : static_cast<size_t>(rows - 1) * stride + static_cast<size_t>(cols));
  backend.copy_to_host(span.data(), tensor.data, span.size() * sizeof(float));
  for (int64_t r = 0; r < rows; ++r)
    std::copy_n(span.data() + static_cast<size_t>(r) * stride, cols, host.data() + r * cols);
  return host;
}

namespace {

// Rows `stride` floats apart (the logits of a padded vocabulary are a strided view).
std::vector<int32_t> argmax_rows(const float* logits, int64_t classes, size_t rows, size_t stride) {
  std::vector<int32_t> best(rows, 0);
  for (size_t r = 0; r < rows; ++r) {
    const float* row = logits + r * stride;
    for (int64_t c = 1; c < classes; ++c)
      if (row[c] > row[best[r]]) best[r] = static_cast<int32_t>(c);
  }
  return best;
}

Tally argmax_tally(const float* logits, int64_t classes, size_t stride, const std::vector<int32_t>& labels) {
  const std::vector<int32_t> predicted = argmax_rows(logits, classes, labels.size(), stride);
  Tally tally;
  for (size_t r = 0; r < labels.size(); ++r) {
    if (labels[r] < 0) continue;
    tally.total += 1;
    tally.correct += predicted[r] == labels[r] ? 1 : 0;
  }
  return tally;
}

}  // namespace

std::vector<int32_t> argmax_rows(const std::vector<float>& logits, int64_t classes, size_t rows) {
  return argmax_rows(logits.data(), classes, rows, static_cast<size_t>(classes));
}

Tally argmax_tally(const std::vector<float>& logits, int64_t classes, const std::vector<int32_t>& labels) {
  return argmax_tally(logits.data(), classes, static_cast<size_t>(classes), labels);
}

Tally masked_lm_tally(const Model& model, loom::Backend& backend, const HostBatch& batch,
                      MaskedLmBreakdown* breakdown) {
  const loom::Tensor logits = model.output("masked_prediction_logits");
  std::vector<int32_t> labels;
  if (batch.mlm_labels != nullptr)
    for (int64_t i = 0; i < batch.batch * batch.seq; ++i)
      if (batch.mlm_labels[i] >= 0) labels.push_back(batch.mlm_labels[i]);
  if (labels.empty() || !logits.defined()) return {};
  if (static_cast<size_t>(logits.shape[0]) != labels.size())
    throw std::runtime_error("masked_prediction_logits has " + std::to_string(logits.shape[0]) +
                             " rows, the batch " + std::to_string(labels.size()) + " labelled positions");
  // The loss op's verdict per row: labels.size() × 4 bytes from the device instead of the logits
  // (625 MB at bert-large seq 128 batch 256, on every log step of a GPU run).
  const loom::Tensor correct = model.output("masked_prediction_correct");
  if (breakdown == nullptr && correct.defined() && correct.dtype == loom::DType::i32 && correct.ndim == 1 &&
      static_cast<size_t>(correct.shape[0]) == labels.size() && correct.is_contiguous()) {
    std::vector<int32_t> verdicts(labels.size());
    backend.copy_to_host(verdicts.data(), correct.data, verdicts.size() * sizeof(int32_t));
    Tally tally;
    tally.total = labels.size();
    for (int32_t v : verdicts) tally.correct += v != 0 ? 1 : 0;
    return tally;
  }
  // In host memory the logits are read where they lie (rows of the padded vocabulary, strided)
  // rather than copied first, only to be read once: [masked rows × vocabulary] floats, 73 MB at
  // batch 32 × seq 128, on every log step of a run.
  if (breakdown == nullptr && logits.dtype == loom::DType::f32 && logits.ndim == 2 &&
      logits.strides[1] == 1 && logits.strides[0] >= logits.shape[1] && host_addressable(backend))
    return argmax_tally(static_cast<const float*>(logits.data), logits.shape[1],
                        static_cast<size_t>(logits.strides[0]), labels);
  const std::vector<float> host = rows_to_host(backend, logits);
  if (breakdown != nullptr)
    breakdown->add(host, logits.shape[1], batch.input_ids, batch.mlm_labels, batch.batch * batch.seq);
  return argmax_tally(host, logits.shape[1], labels);
}

Tally next_sentence_tally(const Model& model, loom::Backend& backend, const HostBatch& batch) {
  const loom::Tensor logits = model.output("seq_relationship_logits");
  if (!logits.defined() || batch.next_sentence_labels == nullptr) return {};
  const std::vector<int32_t> labels(batch.next_sentence_labels, batch.next_sentence_labels + batch.batch);
  return argmax_tally(rows_to_host(backend, logits), logits.shape[1], labels);
}

namespace {

// A class index the model has no output for would fail inside the loss, named by the head; here it
// is named by its file and line. (Negative labels are ignored positions.)
void check_labels(const Model& model, const loom::Dataset& dataset, const HostBatch& batch,
                  std::span<const uint64_t> ids) {
  const int32_t classes = model.config().num_labels;
  if (batch.labels == nullptr || batch.targets != nullptr || classes < 2) return;
  for (size_t r = 0; r < ids.size(); ++r) {
    const int32_t label = batch.labels[r];
    if (label < classes) continue;
    const char* name = dataset.label_name(label);
    throw InputError(fmt::format(
        "{}: label '{}' (class {}) is not one of the {} classes the model has: the evaluation file "
        "lists a label its training file does not",
        describe_rows(dataset, ids.subspan(r, 1)), name != nullptr ? name : std::to_string(label), label,
        classes));
  }
}

}  // namespace

nlohmann::json evaluate(Model& model, loom::Backend& backend, BatchStaging& staging, loom::Dataset& dataset,
                        HostBatchBuffers& buffers, uint64_t max_batches,
                        std::optional<int32_t> mask_token_id, SquadEvaluation* squad) {
  dataset.seek({0, 0});
  const loom::BatchTask task = dataset.limits().task;
  double loss_sum = 0, mlm_loss_sum = 0;
  uint64_t batches = 0, rows = 0, masked = 0;
  uint64_t nonfinite_batches = 0;  // a non-finite output reaches the loss (finite_outputs.hpp)
  Tally mlm, nsp;
  std::optional<MaskedLmBreakdown> breakdown;
  if (mask_token_id) breakdown.emplace(*mask_token_id);
  std::vector<int32_t> predicted, truth;
  std::vector<double> scores, targets;  // regression
  while (max_batches == 0 || batches < max_batches) {
    loom::BatchShape shape{};
    const HostBatch batch = buffers.next(dataset, shape);
    if (shape.epoch != 0) break;  // the whole set was seen
    const std::span<const uint64_t> ids(buffers.instance_ids().data(), static_cast<size_t>(shape.rows));
    if (task == loom::BatchTask::classification) check_labels(model, dataset, batch, ids);
    double loss = 0.0;
    try {
      const loom::BatchView& view = staging.upload(batch);
      model.forward(view, StepSettings{false, 0}, staging.packed());
      // The loss's read is the first wait for the device: a bad id or target a device backend found
      // in this batch's ops is reported there, and so still named with its rows.
      loss = model.loss();
    } catch (const std::exception&) {
      rethrow_with_context("evaluating " + describe_rows(dataset, ids) + ": ");
    }
    if (!std::isfinite(loss)) ++nonfinite_batches;
    loss_sum += loss * shape.rows;
    rows += static_cast<uint64_t>(shape.rows);
    ++batches;
    if (task == loom::BatchTask::pretraining) {
      const Tally t = masked_lm_tally(model, backend, batch, breakdown ? &*breakdown : nullptr);
      const loom::Tensor mlm_loss = model.output("mlm_loss");
      float value = 0;
      if (mlm_loss.defined()) backend.copy_to_host(&value, mlm_loss.data, sizeof(float));
      mlm_loss_sum += static_cast<double>(value) * static_cast<double>(t.total);
      masked += t.total;
      mlm.correct += t.correct, mlm.total += t.total;
      const Tally n = next_sentence_tally(model, backend, batch);
      nsp.correct += n.correct, nsp.total += n.total;
    } else if (task == loom::BatchTask::classification && batch.targets != nullptr) {
      const std::vector<float> logits = rows_to_host(backend, model.output("logits"));
      scores.insert(scores.end(), logits.begin(), logits.begin() + shape.rows);
      targets.insert(targets.end(), batch.targets, batch.targets + shape.rows);
    } else if (task == loom::BatchTask::classification) {
      const loom::Tensor logits = model.output("logits");
      const auto rows = static_cast<size_t>(shape.rows);
      const std::vector<int32_t> best = argmax_rows(rows_to_host(backend, logits), logits.shape[1], rows);
      predicted.insert(predicted.end(), best.begin(), best.end());
      truth.insert(truth.end(), batch.labels, batch.labels + rows);
    }
    if (task == loom::BatchTask::span_extraction && squad != nullptr)
      squad->add_batch(dataset, buffers.instance_ids(), batch.input_ids, shape.rows, batch.seq,
                       rows_to_host(backend, model.output("start_logits")),
                       rows_to_host(backend, model.output("end_logits")));
    if (shape.last_in_epoch) break;
  }
  nlohmann::json out{{"eval_loss", rows == 0 ? 0.0 : loss_sum / static_cast<double>(rows)},
                     {"eval_examples", rows},
                     {"eval_batches", batches}};
  if (task == loom::BatchTask::pretraining) {
    out["eval_mlm_loss"] = masked == 0 ? 0.0 : mlm_loss_sum / static_cast<double>(masked);
    out["eval_mlm_accuracy"] = mlm.rate();
    // A family that pre-trains without next-sentence prediction (no seq_relationship_logits) has
    // no NSP accuracy to report.
    if (model.output("seq_relationship_logits").defined()) out["eval_nsp_accuracy"] = nsp.rate();
    out["eval_masked_tokens"] = masked;
    if (breakdown) out.update(breakdown->metrics());
  } else if (task == loom::BatchTask::classification && dataset.limits().num_labels == 1) {
    const RegressionScores r = regression_scores(scores, targets);
    out["eval_pearson"] = r.pearson;
    out["eval_spearman"] = r.spearman;
    out["eval_pearson_spearman"] = r.pearson_spearman;
    out["eval_mse"] = r.mse;
  } else if (task == loom::BatchTask::classification) {
    const int32_t classes = dataset.limits().num_labels;
    const ClassificationScores c = classification_scores(predicted, truth, classes);
    out["eval_accuracy"] = c.accuracy;
    out["eval_f1"] = c.f1;
    out["eval_mcc"] = c.mcc;
    if (classes == 2) out["eval_accuracy_f1"] = c.accuracy_f1;
  }
  // Answers decoded from NaN logits are no answers: no prediction files, no scores.
  if (task == loom::BatchTask::span_extraction && squad != nullptr && nonfinite_batches == 0)
    out.update(squad->finish());
  withhold_nonfinite_metrics(out, nonfinite_batches);
  return out;
}

}  // namespace loom::host
