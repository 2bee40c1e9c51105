// LinearBias (loom/sdk/ops/linear_bias.hpp) on the CPU: the GEMM into f32 (y itself, or the
// caller's scratch when y is 16-bit), the bias added in f32, and one rounding cast — the ops a block
// runs when the op is not offered, so both paths give the same bits. An f32 y with a row stride of
// its own (the MLM head's padded logits) gets the bias by a broadcast copy and the product
// accumulated onto it, as the head did before it asked for this op.
#include "cpu_backend.hpp"
#include "loom_backend/linear_bias_contract.hpp"

namespace loom_cpu {

void CpuBackend::linear_bias_forward(const loom::Tensor& x, const loom::Tensor& w, const loom::Tensor& bias,
                                     const loom::Tensor& y, const loom::Tensor& scratch) {
  const auto check = checks("linear_bias_forward");
  loom_backend::check_linear_bias_forward(check, x, w, bias, y, scratch);
  if (y.dtype == DType::f32 && !y.is_contiguous()) {
    loom_backend::linear_bias_into_strided_rows(*this, x, w, bias, y);
    return;
  }
  const loom::Tensor& sum = y.dtype == DType::f32 ? y : scratch;
  gemm(x, false, w, true, sum, 1.0f, 0.0f);
  bias_add(sum, bias);
  if (sum.data != y.data) cast(sum, y);
}

}  // namespace loom_cpu
