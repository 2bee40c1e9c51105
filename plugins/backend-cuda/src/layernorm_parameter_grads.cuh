// LayerNorm's dγ and dβ — Σ over rows of dy·x̂ and of dy, x̂ = (x − mean)·rstd — as deterministic
// column sums (column_sums.cuh): layernorm_backward and residual_layernorm_backward accumulate
// them the same way. Both enqueue it before their dx kernel, so dx may alias dy.
#pragma once

#include "column_sums.cuh"
#include "float_storage.cuh"

namespace loom_cuda {

/// dγ and dβ terms of row `row`, column `col`: dy·x̂ and dy.
template <typename SX>
struct LayerNormParameterTerm {
  const float* dy;
  const SX* x;
  const float* mean;
  const float* rstd;
  int64_t cols;
  __device__ void operator()(int64_t row, int64_t col, float* values) const {
    const int64_t i = row * cols + col;
    values[0] = dy[i] * ((load(x, i) - mean[row]) * rstd[row]);
    values[1] = dy[i];
  }
};

/// dgamma += Σ_rows dy·x̂, dbeta += Σ_rows dy over [rows, cols] (period 1). `scratch` holds
/// ColumnSumPlan::make(rows, cols, 1).scratch_floats(2) floats.
template <typename SX>
void accumulate_layernorm_parameter_grads(const float* dy, const SX* x, const float* mean, const float* rstd,
                                          int64_t rows, int64_t cols, float* scratch, float* dgamma,
                                          float* dbeta, cudaStream_t stream) {
  float* const out[2] = {dgamma, dbeta};
  accumulate_column_sums<2>(LayerNormParameterTerm<SX>{dy, x, mean, rstd, cols},
                            ColumnSumPlan::make(rows, cols, 1), scratch, out, stream);
}

}  // namespace loom_cuda
