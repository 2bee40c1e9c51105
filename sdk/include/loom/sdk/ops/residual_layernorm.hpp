// ResidualLayerNorm: the "add & norm" of a post-LN transformer layer as one op (a named interface,
// interfaces.hpp), instead of bias_add, dropout_forward, add and layernorm_forward — four passes
// over a [rows, C] activation, three of them writing it — and, backward, layernorm_backward,
// dropout_backward and bias_grad. A backend that does not offer it runs those ops; blocks ask once,
// at setup.
//
// Forward, for row r and column c of a [rows, C] activation:
//   sum[r, c] = dropout(y[r, c] + bias[c]) + residual[r, c]
//   out[r, :] = (sum[r, :] − mean[r])·rstd[r]·gamma + beta,   rstd = 1/√(var + eps)
// Dropout draws the same Philox words as dropout_forward(p, seed, offset) on a contiguous tensor:
// element (r, c) is dropped exactly when word offset + r·C + c is below the threshold, so the
// fused and the unfused layer drop the same elements for the same key (and a CPU and a GPU
// backend agree).
//
// Backward, from d_out:
//   d_sum    = ∂loss/∂sum (through the LayerNorm): the gradient of `residual`
//   d_branch = dropout'(d_sum) with the forward's mask: the gradient of y + bias
//   dgamma, dbeta, dbias accumulate Σ over rows (of d_out·x̂, d_out and d_branch)
#pragma once

#include <cstdint>

#include "loom/sdk/tensor.hpp"
#include "loom/sdk/version.hpp"

LOOM_SDK_NAMESPACE_BEGIN

class ResidualLayerNorm {
 public:
  static constexpr const char* kInterfaceName = "loom.backend.residual_layernorm";
  static constexpr uint32_t kInterfaceVersion = 1;

  /// y, residual, sum: f32 [rows, C], contiguous (sum may alias y or residual); bias: f32 [C] or
  /// absent; gamma, beta: f32 [C]; out: f32 [rows, C] (OVERWRITE); out_compute: absent, or a
  /// bf16/f16 [rows, C] copy of out for the next GEMM (OVERWRITE); mean, rstd: f32 [rows]
  /// (OVERWRITE, saved for backward). 0 ≤ p < 1; p = 0 applies no dropout (seed, offset unused).
  virtual void residual_layernorm_forward(const Tensor& y, const Tensor& bias, const Tensor& residual,
                                          float p, uint64_t seed, uint64_t offset, const Tensor& gamma,
                                          const Tensor& beta, float eps, const Tensor& sum, const Tensor& out,
                                          const Tensor& out_compute, const Tensor& mean,
                                          const Tensor& rstd) = 0;

  /// d_out, sum, d_sum, d_branch: f32 [rows, C], contiguous (d_sum may alias d_out; d_branch may
  /// alias neither); sum, gamma, mean, rstd, p, seed, offset: as the forward saw them (sum its
  /// output); d_sum, d_branch OVERWRITE; dgamma, dbeta: f32 [C], ACCUMULATE; dbias: f32 [C]
  /// ACCUMULATE, or absent. Results do not depend on the thread or block count (no float atomics).
  virtual void residual_layernorm_backward(const Tensor& d_out, const Tensor& sum, const Tensor& gamma,
                                           const Tensor& mean, const Tensor& rstd, float p, uint64_t seed,
                                           uint64_t offset, const Tensor& d_sum, const Tensor& d_branch,
                                           const Tensor& dgamma, const Tensor& dbeta,
                                           const Tensor& dbias) = 0;

 protected:
  ~ResidualLayerNorm() = default;
};

LOOM_SDK_NAMESPACE_END
