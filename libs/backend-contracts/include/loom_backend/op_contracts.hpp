// The argument contracts of the element-wise, row-wise and lookup ops: the checks every backend
// makes before touching memory, in one place so backend/cpu and backend/cuda accept the same views
// and reject the others with the same message. Each function returns the geometry the op needs.
//
// What only one backend needs (backend/cpu reading ids in place, backend/cuda copying them to
// the host, its launch limits) stays in that backend, after these calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "loom_backend/argument_checks.hpp"

namespace loom_backend {

// ---- embedding_gather, embedding_scatter_add ------------------------------------------------------

/// One row of a [V, C] table per id.
struct EmbeddingRows {
  int64_t ids, cols, vocab;
};

namespace detail {
/// `rows` holds one row of `table`'s columns per id of `ids` (all three already checked as tensors).
inline EmbeddingRows check_rows_per_id(const ArgumentChecks& check, const char* table_name,
                                       const loom::Tensor& table, const loom::Tensor& ids,
                                       const char* rows_name, const loom::Tensor& rows) {
  check.require(table.ndim == 2, std::string(table_name) + " " + table.describe() + " must be [V, C]");
  const int64_t cols = table.shape[1];
  check.require(rows.ndim >= 1 && rows.shape[rows.ndim - 1] == cols,
                std::string(rows_name) + " " + rows.describe() + " must have " + std::to_string(cols) +
                    " columns like " + table_name);
  const int64_t n = ids.numel();
  check.require(rows.numel() == n * cols, std::string(rows_name) + " " + rows.describe() +
                                              " must have one row per id (" + std::to_string(n) + ")");
  return {n, cols, table.shape[0]};
}
}  // namespace detail

/// out[i] (+)= table[ids[i]]. The ids' range is the backend's to check (where they can be read).
inline EmbeddingRows check_embedding_gather(const ArgumentChecks& check, const loom::Tensor& table,
                                            const loom::Tensor& ids, const loom::Tensor& out) {
  check.tensor("table", table, {DType::f32});
  check.tensor("ids", ids, {DType::i32, DType::i64});
  check.tensor("out", out, {DType::f32});
  return detail::check_rows_per_id(check, "table", table, ids, "out", out);
}

/// dtable[ids[i]] += dout[i]. The ids' range is the backend's to check.
/// embedding_scatter_add's order of addition, the same on every backend of this project: the rows
/// of one id in increasing row order, the first kScatterAddChunkRows added to its table row one by
/// one, each later run of kScatterAddChunkRows (the last one possibly shorter) summed from zero in
/// row order and that sum added to the table row, runs in order. An id with few rows is the plain
/// row-by-row sum; an id with many (a token type: half the batch) has partial sums a GPU can form
/// in parallel, where one sequential sum per id would leave it a few thousand threads.
inline constexpr int64_t kScatterAddChunkRows = 128;

inline EmbeddingRows check_embedding_scatter_add(const ArgumentChecks& check, const loom::Tensor& dout,
                                                 const loom::Tensor& ids, const loom::Tensor& dtable) {
  check.tensor("dout", dout, {DType::f32});
  check.tensor("ids", ids, {DType::i32, DType::i64});
  check.tensor("dtable", dtable, {DType::f32});
  return detail::check_rows_per_id(check, "dtable", dtable, ids, "dout", dout);
}

// ---- cross_entropy --------------------------------------------------------------------------------

/// logits [rows, width], of which the first num_classes columns are classes.
struct CrossEntropyRows {
  int64_t rows, width;
};

/// Every view but the targets' values (the backend reads those where they live).
inline CrossEntropyRows check_cross_entropy(const ArgumentChecks& check, const loom::Tensor& logits,
                                            const loom::Tensor& targets, int64_t num_classes,
                                            const loom::Tensor& mean_loss, const loom::Tensor& dlogits,
                                            const loom::Tensor& row_loss, const loom::Tensor& row_correct) {
  check.tensor("logits", logits, {DType::f32});
  check.require(logits.ndim == 2, "logits " + logits.describe() + " must be [N, C]");
  const int64_t rows = logits.shape[0], width = logits.shape[1];
  check.require(
      num_classes >= 1 && num_classes <= width,
      "num_classes " + std::to_string(num_classes) + " must be in [1, " + std::to_string(width) + "]");
  check.tensor("targets", targets, {DType::i32, DType::i64});
  check.require(targets.numel() == rows,
                "targets " + targets.describe() + " needs one target per row (" + std::to_string(rows) + ")");
  check.tensor("mean_loss", mean_loss, {DType::f32});
  check.require(mean_loss.numel() == 1, "mean_loss " + mean_loss.describe() + " must hold one element");
  if (check.optional("dlogits", dlogits, {DType::f32}))
    check.same_shape("logits", logits, "dlogits", dlogits);
  if (check.optional("row_loss", row_loss, {DType::f32}))
    check.require(row_loss.numel() == rows, "row_loss " + row_loss.describe() + " needs one element per row");
  if (check.optional("row_correct", row_correct, {DType::i32}))
    check.require(row_correct.numel() == rows,
                  "row_correct " + row_correct.describe() + " needs one element per row");
  return {rows, width};
}

// ---- additive_key_mask, softmax_forward, softmax_backward -----------------------------------------

/// Rows of `cols` elements; a key mask row serves `rows_per_batch` consecutive rows.
struct SoftmaxRows {
  int64_t rows = 0, cols = 0, rows_per_batch = 0;
  /// Nothing to compute (and, for cols = 0, the key mask was not looked at).
  bool empty() const { return rows == 0 || cols == 0 || rows_per_batch == 0; }
};

inline void check_additive_key_mask(const ArgumentChecks& check, const loom::Tensor& attention_mask,
                                    const loom::Tensor& out) {
  check.tensor("attention_mask", attention_mask, {DType::i32, DType::i64, DType::f32});
  check.tensor("out", out, {DType::f32});
  check.same_shape("attention_mask", attention_mask, "out", out);
}

inline SoftmaxRows check_softmax_forward(const ArgumentChecks& check, const loom::Tensor& scores,
                                         const loom::Tensor& key_mask, const loom::Tensor& probs) {
  check.tensor("scores", scores, {DType::f32, DType::bf16, DType::f16});
  check.tensor("probs", probs, {DType::f32, DType::bf16, DType::f16});
  check.same_shape("scores", scores, "probs", probs);
  check.require(scores.data != probs.data || scores.dtype == probs.dtype,
                "probs may alias scores only with the same dtype");
  SoftmaxRows shape;
  shape.cols = check.columns("scores", scores);
  if (shape.cols == 0) return shape;
  shape.rows = scores.numel() / shape.cols;
  shape.rows_per_batch = shape.rows;
  if (check.optional("key_mask", key_mask, {DType::f32})) {
    check.require(scores.ndim == 4,
                  "with a key_mask, scores must be [B, H, Tq, Tk], got " + scores.describe());
    check.shape("key_mask", key_mask, {scores.shape[0], shape.cols});
    shape.rows_per_batch = scores.shape[1] * scores.shape[2];
  }
  return shape;
}

inline SoftmaxRows check_softmax_backward(const ArgumentChecks& check, const loom::Tensor& dprobs,
                                          const loom::Tensor& probs, const loom::Tensor& dscores) {
  check.tensor("dprobs", dprobs, {DType::f32});
  check.tensor("probs", probs, {DType::f32, DType::bf16, DType::f16});
  check.tensor("dscores", dscores, {DType::f32});
  check.same_shape("dprobs", dprobs, "probs", probs);
  check.same_shape("dprobs", dprobs, "dscores", dscores);
  SoftmaxRows shape;
  shape.cols = check.columns("probs", probs);
  if (shape.cols == 0) return shape;
  shape.rows = probs.numel() / shape.cols;
  shape.rows_per_batch = shape.rows;
  return shape;
}

// ---- layernorm_forward, layernorm_backward --------------------------------------------------------

/// Rows of `cols` (> 0) features.
struct LayerNormRows {
  int64_t rows, cols;
};

namespace detail {
/// A per-row statistic (mean, rstd): f32, one element per row.
inline void check_row_statistic(const ArgumentChecks& check, const char* name, const loom::Tensor& t,
                                int64_t rows) {
  check.tensor(name, t, {DType::f32});
  check.require(t.numel() == rows,
                std::string(name) + " " + t.describe() + " needs " + std::to_string(rows) + " elements");
}
/// The rows of x, which must have columns.
inline LayerNormRows layernorm_rows(const ArgumentChecks& check, const loom::Tensor& x) {
  const int64_t cols = check.columns("x", x);
  check.require(cols > 0, "x has no columns");
  return {x.numel() / cols, cols};
}
}  // namespace detail

inline LayerNormRows check_layernorm_forward(const ArgumentChecks& check, const loom::Tensor& x,
                                             const loom::Tensor& gamma, const loom::Tensor& beta, float eps,
                                             const loom::Tensor& y, const loom::Tensor& mean,
                                             const loom::Tensor& rstd) {
  check.tensor("x", x, {DType::f32, DType::bf16, DType::f16});
  check.tensor("y", y, {DType::f32, DType::bf16, DType::f16});
  check.same_shape("x", x, "y", y);
  const LayerNormRows shape = detail::layernorm_rows(check, x);
  check.tensor("gamma", gamma, {DType::f32});
  check.shape("gamma", gamma, {shape.cols});
  check.tensor("beta", beta, {DType::f32});
  check.shape("beta", beta, {shape.cols});
  detail::check_row_statistic(check, "mean", mean, shape.rows);
  detail::check_row_statistic(check, "rstd", rstd, shape.rows);
  check.require(x.data != y.data || x.dtype == y.dtype, "y may alias x only with the same dtype");
  check.require(eps > 0.0f, "eps must be positive");
  return shape;
}

inline LayerNormRows check_layernorm_backward(const ArgumentChecks& check, const loom::Tensor& dy,
                                              const loom::Tensor& x, const loom::Tensor& gamma,
                                              const loom::Tensor& mean, const loom::Tensor& rstd,
                                              const loom::Tensor& dx, const loom::Tensor& dgamma,
                                              const loom::Tensor& dbeta, bool accumulate_dx) {
  check.tensor("dy", dy, {DType::f32});
  check.tensor("x", x, {DType::f32, DType::bf16, DType::f16});
  check.tensor("dx", dx, {DType::f32});
  check.same_shape("dy", dy, "x", x);
  check.same_shape("dy", dy, "dx", dx);
  const LayerNormRows shape = detail::layernorm_rows(check, x);
  for (const auto* t : {&gamma, &dgamma, &dbeta}) {
    const char* name = t == &gamma ? "gamma" : t == &dgamma ? "dgamma" : "dbeta";
    check.tensor(name, *t, {DType::f32});
    check.shape(name, *t, {shape.cols});
  }
  detail::check_row_statistic(check, "mean", mean, shape.rows);
  detail::check_row_statistic(check, "rstd", rstd, shape.rows);
  check.require(!(accumulate_dx && dx.data == dy.data), "dx may alias dy only when accumulate_dx is false");
  return shape;
}

// ---- bias_add, bias_grad, bias_gelu_*, tanh_*, add, axpby -----------------------------------------

/// x as rows of `cols`, with a bias of `period` rows repeating down them.
struct BiasRows {
  int64_t rows, cols, period;
};

/// x (f32) and a bias (f32) [C] (period 1) or [P, C] checked against x's columns and rows: the
/// arguments of bias_add (x, bias) and bias_grad (dy, dbias).
inline BiasRows check_bias_rows(const ArgumentChecks& check, const char* x_name, const loom::Tensor& x,
                                const char* bias_name, const loom::Tensor& bias) {
  check.tensor(x_name, x, {DType::f32});
  check.tensor(bias_name, bias, {DType::f32});
  const int64_t cols = check.columns(x_name, x);
  const int64_t rows = cols == 0 ? 0 : x.numel() / cols;
  const std::string bias_text = std::string(bias_name) + " " + bias.describe();
  check.require(bias.ndim == 1 || bias.ndim == 2, bias_text + " must be [C] or [P, C]");
  check.require(bias.shape[bias.ndim - 1] == cols,
                bias_text + " must have " + std::to_string(cols) + " columns");
  const int64_t period = bias.ndim == 1 ? 1 : bias.shape[0];
  check.require(
      period > 0 && rows % period == 0,
      bias_text + ": " + std::to_string(rows) + " rows are not a multiple of " + std::to_string(period));
  return {rows, cols, period};
}

/// BiasGradCopy (loom/sdk/ops/bias_grad_copy.hpp): bias_grad's arguments and the 16-bit copy of dy.
inline BiasRows check_bias_grad_copy(const ArgumentChecks& check, const loom::Tensor& dy, const loom::Tensor& dbias,
                                     const loom::Tensor& dy_compute) {
  const BiasRows shape = check_bias_rows(check, "dy", dy, "dbias", dbias);
  check.tensor("dy_compute", dy_compute, {DType::bf16, DType::f16});
  check.same_shape("dy", dy, "dy_compute", dy_compute);
  check.require(dy_compute.data != dy.data && dy_compute.data != dbias.data,
                "dy_compute may not alias dy or dbias");
  return shape;
}

/// Returns the columns of x (the bias' length).
inline int64_t check_bias_gelu_forward(const ArgumentChecks& check, const loom::Tensor& x,
                                       const loom::Tensor& bias, const loom::Tensor& y) {
  check.tensor("x", x, {DType::f32, DType::bf16, DType::f16});
  check.tensor("y", y, {DType::f32, DType::bf16, DType::f16});
  check.same_shape("x", x, "y", y);
  const int64_t cols = check.columns("x", x);
  if (check.optional("bias", bias, {DType::f32})) check.shape("bias", bias, {cols});
  check.require(x.data != y.data || x.dtype == y.dtype, "y may alias x only with the same dtype");
  return cols;
}

/// Returns the columns of x (the length of bias and dbias).
inline int64_t check_bias_gelu_backward(const ArgumentChecks& check, const loom::Tensor& dy,
                                        const loom::Tensor& x, const loom::Tensor& bias,
                                        const loom::Tensor& dx, const loom::Tensor& dbias) {
  check.tensor("dy", dy, {DType::f32});
  check.tensor("x", x, {DType::f32, DType::bf16, DType::f16});
  check.tensor("dx", dx, {DType::f32});
  check.same_shape("dy", dy, "x", x);
  check.same_shape("dy", dy, "dx", dx);
  const int64_t cols = check.columns("x", x);
  if (check.optional("bias", bias, {DType::f32})) check.shape("bias", bias, {cols});
  if (check.optional("dbias", dbias, {DType::f32})) check.shape("dbias", dbias, {cols});
  return cols;
}

/// BiasGeluBackwardCopy (loom/sdk/ops/bias_gelu_backward_copy.hpp): bias_gelu_backward's arguments
/// (dx optional: absent, dy takes its place) and the 16-bit copy of dx.
inline int64_t check_bias_gelu_backward_copy(const ArgumentChecks& check, const loom::Tensor& dy,
                                             const loom::Tensor& x, const loom::Tensor& bias,
                                             const loom::Tensor& dx, const loom::Tensor& dx_compute,
                                             const loom::Tensor& dbias) {
  const int64_t cols = check_bias_gelu_backward(check, dy, x, bias, dx.defined() ? dx : dy, dbias);
  check.tensor("dx_compute", dx_compute, {DType::bf16, DType::f16});
  check.same_shape("dy", dy, "dx_compute", dx_compute);
  check.require(dx_compute.data != dy.data && dx_compute.data != x.data && dx_compute.data != dx.data,
                "dx_compute may not alias dy, x or dx");
  return cols;
}

inline void check_tanh_forward(const ArgumentChecks& check, const loom::Tensor& x, const loom::Tensor& y) {
  check.tensor("x", x, {DType::f32});
  check.tensor("y", y, {DType::f32});
  check.same_shape("x", x, "y", y);
}

inline void check_tanh_backward(const ArgumentChecks& check, const loom::Tensor& dy, const loom::Tensor& y,
                                const loom::Tensor& dx) {
  check.tensor("dy", dy, {DType::f32});
  check.tensor("y", y, {DType::f32});
  check.tensor("dx", dx, {DType::f32});
  check.same_shape("dy", dy, "y", y);
  check.same_shape("dy", dy, "dx", dx);
}

inline void check_add(const ArgumentChecks& check, const loom::Tensor& a, const loom::Tensor& b,
                      const loom::Tensor& out) {
  check.tensor("a", a, {DType::f32, DType::bf16, DType::f16});
  check.tensor("b", b, {DType::f32, DType::bf16, DType::f16});
  check.tensor("out", out, {DType::f32, DType::bf16, DType::f16});
  check.same_shape("a", a, "out", out);
  check.same_shape("b", b, "out", out);
}

inline void check_axpby(const ArgumentChecks& check, const loom::Tensor& x, const loom::Tensor& y) {
  check.tensor("x", x, {DType::f32});
  check.tensor("y", y, {DType::f32});
  check.same_shape("x", x, "y", y);
}

// ---- dropout_forward, dropout_backward ------------------------------------------------------------

namespace detail {
inline void check_drop_probability(const ArgumentChecks& check, float p) {
  check.require(p >= 0.0f && p < 1.0f, "drop probability " + std::to_string(p) + " is outside [0, 1)");
}
}  // namespace detail

inline void check_dropout_forward(const ArgumentChecks& check, const loom::Tensor& x, const loom::Tensor& y,
                                  float p) {
  check.tensor("x", x, {DType::f32, DType::bf16, DType::f16});
  check.tensor("y", y, {DType::f32, DType::bf16, DType::f16});
  check.same_shape("x", x, "y", y);
  check.require(x.data != y.data || x.dtype == y.dtype, "y may alias x only with the same dtype");
  detail::check_drop_probability(check, p);
}

inline void check_dropout_backward(const ArgumentChecks& check, const loom::Tensor& dy,
                                   const loom::Tensor& dx, float p) {
  check.tensor("dy", dy, {DType::f32});
  check.tensor("dx", dx, {DType::f32});
  check.same_shape("dy", dy, "dx", dx);
  detail::check_drop_probability(check, p);
}

// ---- sum_squares, global_norm, check_finite -------------------------------------------------------

/// segment_offsets holds num_segments + 1 increasing offsets inside x, out one value per segment.
inline void check_sum_squares(const ArgumentChecks& check, const loom::Tensor& x,
                              const int64_t* segment_offsets, size_t num_segments, const loom::Tensor& out) {
  check.tensor("x", x, {DType::f32});
  check.tensor("out", out, {DType::f32});
  check.require(segment_offsets != nullptr, "segment_offsets is null");
  check.require(
      out.numel() == static_cast<int64_t>(num_segments),
      "out " + out.describe() + " needs one element per segment (" + std::to_string(num_segments) + ")");
  const int64_t n = x.numel();
  for (size_t s = 0; s < num_segments; ++s)
    check.require(segment_offsets[s] >= 0 && segment_offsets[s] <= segment_offsets[s + 1] &&
                      segment_offsets[s + 1] <= n,
                  "segment " + std::to_string(s) + " [" + std::to_string(segment_offsets[s]) + ", " +
                      std::to_string(segment_offsets[s + 1]) + ") is not an increasing range inside x (" +
                      std::to_string(n) + " elements)");
}

inline void check_global_norm(const ArgumentChecks& check, const loom::Tensor& x, const loom::Tensor& out) {
  check.tensor("x", x, {DType::f32});
  check.tensor("out", out, {DType::f32});
  check.require(out.numel() == 1, "out " + out.describe() + " must hold one element");
}

/// The arguments of check_finite: x of any float dtype, an i32 flag of one element.
inline void check_finite_flag(const ArgumentChecks& check, const loom::Tensor& x, const loom::Tensor& flag) {
  check.tensor("x", x, {DType::f32, DType::bf16, DType::f16});
  check.tensor("flag", flag, {DType::i32});
  check.require(flag.numel() == 1, "flag " + flag.describe() + " must hold one element");
}

// ---- fill, copy, cast ----------------------------------------------------------------------------

/// fill's x: any dtype, any strides, in this backend's memory.
inline void check_fill(const ArgumentChecks& check, const loom::Tensor& x) {
  check.on_device("x", x);
}

/// copy: any strides, the same shape and dtype.
inline void check_copy(const ArgumentChecks& check, const loom::Tensor& src, const loom::Tensor& dst) {
  check.on_device("src", src);
  check.on_device("dst", dst);
  check.same_shape("src", src, "dst", dst);
  check.require(src.dtype == dst.dtype, std::string("src is ") + loom::dtype_name(src.dtype) +
                                            " but dst is " + loom::dtype_name(dst.dtype) +
                                            "; use cast to convert");
}

/// cast: dense float views of the same shape.
inline void check_cast(const ArgumentChecks& check, const loom::Tensor& src, const loom::Tensor& dst) {
  check.tensor("src", src, {DType::f32, DType::bf16, DType::f16});
  check.tensor("dst", dst, {DType::f32, DType::bf16, DType::f16});
  check.same_shape("src", src, "dst", dst);
}

}  // namespace loom_backend
