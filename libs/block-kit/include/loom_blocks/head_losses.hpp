// The losses of the task heads every family shares, on a backend: sequence classification
// (cross-entropy over `num_labels` classes, or with one output mean squared error against f32
// targets, as Hugging Face's *ForSequenceClassification) and extractive question answering (the
// mean of the start and end cross-entropies over the T positions, position T = no answer).
#pragma once

#include <cstdint>
#include <string>

#include "loom/sdk/backend.hpp"
#include "loom/sdk/block.hpp"
#include "loom/sdk/error.hpp"

namespace loom_blocks {

/// Classification of B rows from `logits` [B, num_labels] (f32) against the batch's labels.
class ClassificationLoss {
 public:
  ClassificationLoss(loom::Backend& backend, std::string block, int64_t num_labels)
      : backend_(backend), block_(std::move(block)), num_labels_(num_labels) {}

  bool regression() const { return num_labels_ == 1; }

  /// A classifier needs at least one output; throws ConfigError naming the key.
  static void check_num_labels(const std::string& block, int64_t num_labels) {
    if (num_labels < 1)
      throw loom::ConfigError(block + ": model config num_labels = " + std::to_string(num_labels) +
                              " must be at least 1 (1: regression, 2 or more: classes)");
  }

  /// output (f32 [1]) = the loss, or 0 without labels. `diff` (f32 [B, 1], regression only) keeps
  /// logits − targets for backward.
  void forward(const loom::BatchView& batch, const loom::Tensor& logits, const loom::Tensor& diff,
               const loom::Tensor& output) const {
    if (!batch.labels.defined()) {
      backend_.zero(output);
    } else if (regression()) {
      check_labels(batch.labels, loom::DType::f32);
      backend_.copy(logits, diff);  // loss = Σ diff² / B
      backend_.axpby(-1.0f, batch.labels.reshape({batch.batch, 1}), 1.0f, diff);
      const int64_t segment[2] = {0, batch.batch};
      backend_.sum_squares(diff, segment, 1, output);
      backend_.axpby(1.0f / static_cast<float>(batch.batch), output, 0.0f, output);
    } else {
      check_labels(batch.labels, loom::DType::i32);
      backend_.cross_entropy(logits, batch.labels, num_labels_, loom::kIgnoreIndex, 1.0f, output, {}, {}, {});
    }
  }
  /// d_logits (f32 [B, num_labels], OVERWRITE) = the gradient of loss × loss_scale; `loss` is an f32
  /// [1] scratch. Call only when the batch has labels.
  void backward(const loom::BatchView& batch, const loom::Tensor& logits, const loom::Tensor& diff,
                float loss_scale, const loom::Tensor& loss, const loom::Tensor& d_logits) const {
    if (regression())  // d(Σ diff² / B)/d logits = 2·diff / B
      backend_.axpby(2.0f * loss_scale / static_cast<float>(batch.batch), diff, 0.0f, d_logits);
    else
      backend_.cross_entropy(logits, batch.labels, num_labels_, loom::kIgnoreIndex, loss_scale, loss, d_logits, {},
                             {});
  }

 private:
  void check_labels(const loom::Tensor& labels, loom::DType expected) const {
    if (labels.dtype != expected)
      throw loom::Error(block_ + ": num_labels = " + std::to_string(num_labels_) + " needs " +
                        (expected == loom::DType::f32 ? "f32 regression targets" : "i32 class indices") +
                        " as labels, the batch has " + loom::dtype_name(labels.dtype) +
                        " (does the dataset's label count match the model config's num_labels?)");
  }

  loom::Backend& backend_;
  std::string block_;
  int64_t num_labels_;
};

/// Question answering from `logits` [B·T, 2] (start, end per position).
class SpanLoss {
 public:
  explicit SpanLoss(loom::Backend& backend) : backend_(backend) {}

  static bool has_spans(const loom::BatchView& batch) {
    return batch.start_positions.defined() && batch.end_positions.defined();
  }

  /// start, end (f32 [B, T]) = the logits' columns; output (f32 [1]) = (CE(start) + CE(end)) / 2,
  /// or 0 without answer positions; start_loss, end_loss: f32 [1] each.
  void forward(const loom::BatchView& batch, const loom::Tensor& logits, const loom::Tensor& start,
               const loom::Tensor& end, const loom::Tensor& start_loss, const loom::Tensor& end_loss,
               const loom::Tensor& output) const {
    const int64_t B = batch.batch, T = batch.seq;
    const loom::Tensor pairs = logits.reshape({B, T, 2});
    backend_.copy(pairs.select(2, 0), start);
    backend_.copy(pairs.select(2, 1), end);
    if (!has_spans(batch)) {
      backend_.zero(output);
      return;
    }
    backend_.cross_entropy(start, batch.start_positions, T, T, 1.0f, start_loss, {}, {}, {});
    backend_.cross_entropy(end, batch.end_positions, T, T, 1.0f, end_loss, {}, {}, {});
    backend_.axpby(0.5f, start_loss, 0.0f, output);
    backend_.axpby(0.5f, end_loss, 1.0f, output);
  }
  /// d_logits (f32 [B·T, 2], OVERWRITE) = the gradient of loss × loss_scale; d_start, d_end: f32
  /// [B, T] and loss: f32 [1] scratch. Call only when has_spans(batch).
  void backward(const loom::BatchView& batch, const loom::Tensor& start, const loom::Tensor& end, float loss_scale,
                const loom::Tensor& loss, const loom::Tensor& d_start, const loom::Tensor& d_end,
                const loom::Tensor& d_logits) const {
    const int64_t B = batch.batch, T = batch.seq;
    backend_.cross_entropy(start, batch.start_positions, T, T, 0.5f * loss_scale, loss, d_start, {}, {});
    backend_.cross_entropy(end, batch.end_positions, T, T, 0.5f * loss_scale, loss, d_end, {}, {});
    const loom::Tensor d_pairs = d_logits.reshape({B, T, 2});
    backend_.copy(d_start, d_pairs.select(2, 0));
    backend_.copy(d_end, d_pairs.select(2, 1));
  }

 private:
  loom::Backend& backend_;
};

}  // namespace loom_blocks
