// ResidualLayerNorm (loom/sdk/ops/residual_layernorm.hpp) on the CPU: one pass over each row
// instead of four ops over the whole activation, with the arithmetic of the separate ops —
// bias_add, dropout (philox_words.hpp), add and LayerNorm (layernorm_rows.hpp) — so the fused and
// the unfused encoder layer agree bit for bit. Rows are independent and run in parallel; dγ/dβ
// and dbias reduce over rows in order (no result depends on the thread count).
//
// The kept value (y + bias)·scale is stored before the residual is added in a loop of its own, so
// that the compiler cannot contract the multiply and the add into one FMA, which the separate
// ops (a store between them) never do.
#include <vector>

#include "column_sums.hpp"
#include "cpu_backend.hpp"
#include "float_storage.hpp"
#include "layernorm_rows.hpp"
#include "loom/sdk/philox.hpp"
#include "loom_backend/residual_layernorm_contract.hpp"
#include "op_preamble.hpp"
#include "philox_words.hpp"

namespace loom_cpu {
namespace {

/// The dropout of one row: its Philox words and what a kept element is multiplied by.
class RowDropout {
 public:
  RowDropout(float p, uint64_t seed, uint64_t offset, int64_t cols)
      : active_(p > 0.0f),
        threshold_(loom::dropout_threshold(p)),
        scale_(1.0f / (1.0f - p)),
        seed_(seed),
        offset_(offset),
        cols_(cols) {}

  bool active() const { return active_; }
  float scale() const { return scale_; }
  uint32_t threshold() const { return threshold_; }

  /// The words of row r's elements, in `buffer` (grown as needed); element c's is result[c].
  const uint32_t* words(int64_t r, std::vector<uint32_t>& buffer) const {
    const uint64_t first = offset_ + static_cast<uint64_t>(r * cols_);
    const uint64_t last = first + static_cast<uint64_t>(cols_ - 1);
    const uint64_t first_block = first >> 2;
    const auto blocks = static_cast<int64_t>((last >> 2) - first_block + 1);
    buffer.resize(static_cast<size_t>(4 * blocks));
    philox_blocks(first_block, blocks, seed_, buffer.data());
    return buffer.data() + (first & 3u);
  }

 private:
  bool active_;
  uint32_t threshold_;
  float scale_;
  uint64_t seed_, offset_;
  int64_t cols_;
};

/// sum = dropout(y + bias) + residual and out = LayerNorm(sum) for one row; out_c: its 16-bit copy.
/// The kept branch value is formed in `sum`, or in `row_buffer` (cols floats) when sum is the
/// residual itself, which it would overwrite before the residual is read.
template <typename SC>
void forward_row(const float* y, const float* bias, const float* residual, const uint32_t* words,
                 const RowDropout& dropout, const float* gamma, const float* beta, float eps, float* sum,
                 float* out, SC* out_c, int64_t cols, float& mean, float& rstd, float* row_buffer) {
  float* kept = sum == residual ? row_buffer : sum;
  if (bias != nullptr) {
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) kept[c] = y[c] + bias[c];
  } else if (kept != y) {
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) kept[c] = y[c];
  }
  if (dropout.active()) {
    const uint32_t threshold = dropout.threshold();
    const float scale = dropout.scale();
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) kept[c] = words[c] >= threshold ? kept[c] * scale : 0.0f;
  }
#pragma omp simd
  for (int64_t c = 0; c < cols; ++c) sum[c] = kept[c] + residual[c];
  layernorm_row(sum, gamma, beta, eps, out, cols, mean, rstd);
  if (out_c != nullptr) {
#pragma omp simd
    for (int64_t c = 0; c < cols; ++c) store(out_c, c, out[c]);
  }
}

}  // namespace

void CpuBackend::residual_layernorm_forward(const loom::Tensor& y, const loom::Tensor& bias,
                                            const loom::Tensor& residual, float p, uint64_t seed,
                                            uint64_t offset, const loom::Tensor& gamma,
                                            const loom::Tensor& beta, float eps, const loom::Tensor& sum,
                                            const loom::Tensor& out, const loom::Tensor& out_compute,
                                            const loom::Tensor& mean, const loom::Tensor& rstd) {
  // Without out_compute the f32 instantiation runs with a null copy, which forward_row skips.
  const DType copy_dtype = out_compute.defined() ? out_compute.dtype : DType::f32;
  run_op(
      "residual_layernorm_forward",
      [&](const ArgumentChecks& check) {
        return loom_backend::check_residual_layernorm_forward(check, y, bias, residual, p, gamma, beta, eps,
                                                              sum, out, out_compute, mean, rstd);
      },
      {copy_dtype},
      [&](const loom_backend::LayerNormRows& shape, auto copy_type) {
        using SC = decltype(copy_type);
        const int64_t rows = shape.rows, cols = shape.cols;
        const RowDropout dropout(p, seed, offset, cols);
        const auto* ys = static_cast<const float*>(y.data);
        const auto* rs = static_cast<const float*>(residual.data);
        const auto* b = bias.defined() ? static_cast<const float*>(bias.data) : nullptr;
        auto* sums = static_cast<float*>(sum.data);
        auto* outs = static_cast<float*>(out.data);
        auto* means = static_cast<float*>(mean.data);
        auto* rstds = static_cast<float*>(rstd.data);
        const auto* g = static_cast<const float*>(gamma.data);
        const auto* be = static_cast<const float*>(beta.data);
        SC* out_c = out_compute.defined() ? static_cast<SC*>(out_compute.data) : nullptr;
#pragma omp parallel num_threads(threads_) if (rows * cols > kParallelMinElements)
        {
          std::vector<uint32_t> buffer;
          std::vector<float> row_buffer(sums == rs ? static_cast<size_t>(cols) : 0);
#pragma omp for schedule(static)
          for (int64_t r = 0; r < rows; ++r) {
            const uint32_t* words = dropout.active() ? dropout.words(r, buffer) : nullptr;
            forward_row(ys + r * cols, b, rs + r * cols, words, dropout, g, be, eps, sums + r * cols,
                        outs + r * cols, out_c ? out_c + r * cols : out_c, cols, means[r], rstds[r],
                        row_buffer.data());
          }
        }
      });
}

void CpuBackend::residual_layernorm_backward(const loom::Tensor& d_out, const loom::Tensor& sum,
                                             const loom::Tensor& gamma, const loom::Tensor& mean,
                                             const loom::Tensor& rstd, float p, uint64_t seed,
                                             uint64_t offset, const loom::Tensor& d_sum,
                                             const loom::Tensor& d_branch, const loom::Tensor& dgamma,
                                             const loom::Tensor& dbeta, const loom::Tensor& dbias) {
  run_op(
      "residual_layernorm_backward",
      [&](const ArgumentChecks& check) {
        return loom_backend::check_residual_layernorm_backward(check, d_out, sum, gamma, mean, rstd, p, d_sum,
                                                               d_branch, dgamma, dbeta, dbias);
      },
      [&](const loom_backend::LayerNormRows& shape) {
        const int64_t rows = shape.rows, cols = shape.cols;
        const auto* dys = static_cast<const float*>(d_out.data);
        const auto* xs = static_cast<const float*>(sum.data);
        const auto* means = static_cast<const float*>(mean.data);
        const auto* rstds = static_cast<const float*>(rstd.data);
        const auto* g = static_cast<const float*>(gamma.data);
        auto* dsums = static_cast<float*>(d_sum.data);
        auto* dbranch = static_cast<float*>(d_branch.data);
        // dγ/dβ first: d_sum may alias d_out.
        layernorm_parameter_grads(dys, xs, means, rstds, static_cast<float*>(dgamma.data),
                                  static_cast<float*>(dbeta.data), rows, cols, threads_);
        const RowDropout dropout(p, seed, offset, cols);
#pragma omp parallel num_threads(threads_) if (rows * cols > kParallelMinElements)
        {
          std::vector<uint32_t> buffer;
#pragma omp for schedule(static)
          for (int64_t r = 0; r < rows; ++r) {
            float* ds = dsums + r * cols;
            float* db = dbranch + r * cols;
            layernorm_input_grad_row(dys + r * cols, xs + r * cols, g, means[r], rstds[r], ds, false, cols);
            if (dropout.active()) {
              const uint32_t* words = dropout.words(r, buffer);
              const uint32_t threshold = dropout.threshold();
              const float scale = dropout.scale();
#pragma omp simd
              for (int64_t c = 0; c < cols; ++c) db[c] = words[c] >= threshold ? ds[c] * scale : 0.0f;
            } else {
#pragma omp simd
              for (int64_t c = 0; c < cols; ++c) db[c] = ds[c];
            }
          }
        }
        if (dbias.defined())
          accumulate_column_sums(dbranch, rows, cols, 1, static_cast<float*>(dbias.data), threads_);
      });
}

// ResidualLayerNormBackwardCopy: the backward, then the cast, so both paths give the same bits (the
// named interface saves a GPU a pass; here it only keeps the encoder layer on one path).
void CpuBackend::residual_layernorm_backward_copy(const loom::Tensor& d_out, const loom::Tensor& sum,
                                                  const loom::Tensor& gamma, const loom::Tensor& mean,
                                                  const loom::Tensor& rstd, float p, uint64_t seed,
                                                  uint64_t offset, const loom::Tensor& d_sum,
                                                  const loom::Tensor& d_branch,
                                                  const loom::Tensor& d_branch_compute, const loom::Tensor& dgamma,
                                                  const loom::Tensor& dbeta, const loom::Tensor& dbias) {
  run_op(
      "residual_layernorm_backward_copy",
      [&](const ArgumentChecks& check) {
        return loom_backend::check_residual_layernorm_backward_copy(check, d_out, sum, gamma, mean, rstd, p,
                                                                    d_sum, d_branch, d_branch_compute, dgamma,
                                                                    dbeta, dbias);
      },
      [&](const loom_backend::LayerNormRows&) {
        residual_layernorm_backward(d_out, sum, gamma, mean, rstd, p, seed, offset, d_sum, d_branch, dgamma,
                                    dbeta, dbias);
        cast(d_branch, d_branch_compute);
      });
}

}  // namespace loom_cpu
