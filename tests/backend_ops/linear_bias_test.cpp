// LinearBias (loom/sdk/ops/linear_bias.hpp): y = x·Wᵀ + bias into f32, bf16 and f16 against float64
// (16-bit: the f32 sum rounded once, so within one rounding plus the product's error), the same bits
// as gemm into f32, bias_add and cast where the backend runs backend/cpu's code, a strided x (the
// rows of a wider activation), an f32 y with a row stride of its own (the MLM head's padded logits:
// padding untouched), a bias that is not 16-byte aligned, and the argument contract (the scratch a 16-bit y needs, a contiguous 16-bit
// y, the bias's length, w's dtype, a 16-bit y of x's dtype). Skipped on a backend that does not offer the op.
#include "backend_op_case.hpp"
#include "loom/sdk/ops/linear_bias.hpp"

namespace loom_backend_ops {
namespace {

using loom::DType;

LOOM_BACKEND_OP_FAMILY(LinearBias);

/// x·Wᵀ + bias in float64: x [rows, in] with row stride ldx, w [out, in].
std::vector<double> reference_linear(const std::vector<float>& x, int64_t ldx, const std::vector<float>& w,
                                     const std::vector<float>& bias, int64_t rows, int64_t in, int64_t out) {
  std::vector<double> y(static_cast<size_t>(rows * out));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t o = 0; o < out; ++o) {
      double s = bias[o];
      for (int64_t i = 0; i < in; ++i) s += static_cast<double>(x[r * ldx + i]) * w[o * in + i];
      y[r * out + o] = s;
    }
  return y;
}

/// The values a tensor of `dtype` holds for `values` (16-bit operands are rounded before the product).
std::vector<float> stored(const std::vector<float>& values, DType dtype, std::vector<int64_t> shape) {
  return HostTensor::of(values, dtype, std::move(shape)).floats();
}

TEST_P(LinearBias, EveryOutputDtypeMatchesFloat64WithinOneRounding) {
  LOOM_OFFERED_OR_SKIP(loom::LinearBias, op);
  const int64_t rows = 37, in = 48, out = 72;  // out: a [3H] projection of H = 24
  for (DType operands : {DType::f32, DType::bf16, DType::f16})
    for (DType output : {DType::f32, DType::bf16, DType::f16}) {
      if (output != DType::f32 && output != operands) continue;  // a 16-bit y has the operands' dtype
      SCOPED_TRACE(std::string(loom::dtype_name(operands)) + " operands, " + loom::dtype_name(output) + " y");
      const auto x = stored(random_floats(rows * in, 21), operands, {rows, in});
      const auto w = stored(random_floats(out * in, 22), operands, {out, in});
      const auto bias = random_floats(out, 23);
      DeviceTensor x_dev = upload(HostTensor::of(x, operands, {rows, in}));
      DeviceTensor w_dev = upload(HostTensor::of(w, operands, {out, in}));
      DeviceTensor b_dev = upload(HostTensor::of(bias, DType::f32, {out}));
      DeviceTensor y_dev = upload_zeros(output, {rows, out});
      DeviceTensor scratch = upload_zeros(DType::f32, {rows, out});
      op->linear_bias_forward(x_dev.view(), w_dev.view(), b_dev.view(), y_dev.view(),
                               output == DType::f32 ? loom::Tensor{} : scratch.view());
      expect_close(read(y_dev), reference_linear(x, in, w, bias, rows, in, out),
                   kDotProduct + one_rounding(output), "linear + bias");
    }
}

TEST_P(LinearBias, SameBitsAsGemmBiasAddAndCastOnTheReferenceCode) {
  LOOM_OFFERED_OR_SKIP(loom::LinearBias, op);
  const int64_t rows = 64, in = 40, out = 24;
  for (DType dtype : {DType::f32, DType::bf16}) {
    SCOPED_TRACE(loom::dtype_name(dtype));
    HostTensor x = HostTensor::of(random_floats(rows * in, 31), dtype, {rows, in});
    HostTensor w = HostTensor::of(random_floats(out * in, 32), dtype, {out, in});
    HostTensor bias = HostTensor::of(random_floats(out, 33), DType::f32, {out});
    // The unfused ops on the reference backend.
    HostTensor sum = HostTensor::zeros(DType::f32, {rows, out}), expected = HostTensor::zeros(dtype, {rows, out});
    reference().gemm(x.view(), false, w.view(), true, sum.view(), 1.0f, 0.0f);
    reference().bias_add(sum.view(), bias.view());
    reference().cast(sum.view(), expected.view());
    DeviceTensor x_dev = upload(x), w_dev = upload(w), b_dev = upload(bias);
    DeviceTensor y_dev = upload_zeros(dtype, {rows, out}), scratch = upload_zeros(DType::f32, {rows, out});
    op->linear_bias_forward(x_dev.view(), w_dev.view(), b_dev.view(), y_dev.view(),
                             dtype == DType::f32 ? loom::Tensor{} : scratch.view());
    if (runs_reference_code()) {
      expect_same_bits(y_dev.download(), expected, "linear + bias against gemm, bias_add, cast");
    } else {  // another GEMM sums in another order: within the product's error and one rounding
      expect_close(read(y_dev), expected.floats(), kDotProduct + one_ulp(dtype), "linear + bias");
    }
  }
}

TEST_P(LinearBias, ABiasThatIsNotSixteenByteAligned) {
  LOOM_OFFERED_OR_SKIP(loom::LinearBias, op);
  // The bias starts 1 and 2 floats into its buffer (4- and 8-byte aligned): the result is the same
  // sum as with an aligned bias (a backend may take another path for it, never a refusal).
  const int64_t rows = 21, in = 32, out = 40;
  const auto x = stored(random_floats(rows * in, 61), DType::bf16, {rows, in});
  const auto w = stored(random_floats(out * in, 62), DType::bf16, {out, in});
  const auto padded = random_floats(out + 2, 63);
  DeviceTensor x_dev = upload(HostTensor::of(x, DType::bf16, {rows, in}));
  DeviceTensor w_dev = upload(HostTensor::of(w, DType::bf16, {out, in}));
  DeviceTensor b_dev = upload(HostTensor::of(padded, DType::f32, {out + 2}));
  for (int64_t shift : {1, 2}) {
    SCOPED_TRACE("bias " + std::to_string(shift) + " floats into its buffer");
    const std::vector<float> bias(padded.begin() + shift, padded.begin() + shift + out);
    DeviceTensor y_dev = upload_zeros(DType::bf16, {rows, out}), scratch = upload_zeros(DType::f32, {rows, out});
    op->linear_bias_forward(x_dev.view(), w_dev.view(), b_dev.view().narrow(0, shift, out), y_dev.view(),
                             scratch.view());
    expect_close(read(y_dev), reference_linear(x, in, w, bias, rows, in, out), kDotProduct + one_rounding(DType::bf16),
                 "linear + a shifted bias");
  }
}

TEST_P(LinearBias, RowsOfAWiderActivation) {
  LOOM_OFFERED_OR_SKIP(loom::LinearBias, op);
  // x: the first 16 columns of a [rows, 40] buffer (row stride 40), y: 3 of 5 column blocks.
  const int64_t rows = 29, in = 16, ld = 40, out = 12;
  const auto wide = random_floats(rows * ld, 41), w = random_floats(out * in, 42), bias = random_floats(out, 43);
  DeviceTensor x_dev = upload(HostTensor::of(wide, DType::f32, {rows, ld}));
  DeviceTensor w_dev = upload(HostTensor::of(w, DType::f32, {out, in}));
  DeviceTensor b_dev = upload(HostTensor::of(bias, DType::f32, {out}));
  DeviceTensor y_dev = upload_zeros(DType::f32, {rows, out});
  op->linear_bias_forward(x_dev.view().narrow(1, 0, in), w_dev.view(), b_dev.view(), y_dev.view(), {});
  expect_close(read(y_dev), reference_linear(wide, ld, w, bias, rows, in, out), kDotProduct, "strided x");
}

TEST_P(LinearBias, F32RowsWithAStrideOfTheirOwn) {
  LOOM_OFFERED_OR_SKIP(loom::LinearBias, op);
  // y: the first 21 (then the last 3) of 27 columns of each row, the rest a sentinel that must stay.
  const int64_t rows = 19, in = 32, ld = 27;
  const auto x = random_floats(rows * in, 51), w = random_floats(ld * in, 52), bias = random_floats(ld, 53);
  const float sentinel = -7.25f;
  for (DType operands : {DType::f32, DType::bf16}) {
    for (const auto& [at, out] : {std::pair<int64_t, int64_t>{0, 21}, std::pair<int64_t, int64_t>{24, 3}}) {
      SCOPED_TRACE(std::string(loom::dtype_name(operands)) + " operands, columns " + std::to_string(at) + "+" +
                   std::to_string(out));
      const std::vector<float> w_part(w.begin() + at * in, w.begin() + (at + out) * in);
      const std::vector<float> b_part(bias.begin() + at, bias.begin() + at + out);
      DeviceTensor x_dev = upload(HostTensor::of(x, operands, {rows, in}));
      DeviceTensor w_dev = upload(HostTensor::of(w_part, operands, {out, in}));
      DeviceTensor b_dev = upload(HostTensor::of(b_part, DType::f32, {out}));
      DeviceTensor y_dev = upload(HostTensor::of(std::vector<float>(rows * ld, sentinel), DType::f32, {rows, ld}));
      op->linear_bias_forward(x_dev.view(), w_dev.view(), b_dev.view(), y_dev.view().narrow(1, at, out), {});
      const std::vector<float> y = read(y_dev);
      std::vector<float> part, padding;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < ld; ++c) (c >= at && c < at + out ? part : padding).push_back(y[r * ld + c]);
      expect_equal(padding, std::vector<float>(padding.size(), sentinel), "columns outside y");
      const std::vector<double> expected =
          reference_linear(stored(x, operands, {rows, in}), in, stored(w_part, operands, {out, in}), b_part, rows,
                           in, out);
      expect_close(part, expected, kDotProduct, "strided f32 y");
      if (runs_reference_code()) {  // the bias broadcast in, then the product accumulated onto it
        std::vector<float> broadcast;
        for (int64_t r = 0; r < rows; ++r) broadcast.insert(broadcast.end(), b_part.begin(), b_part.end());
        HostTensor y_ref = HostTensor::of(broadcast, DType::f32, {rows, out});
        HostTensor x_host = HostTensor::of(x, operands, {rows, in}), w_host = HostTensor::of(w_part, operands, {out, in});
        reference().gemm(x_host.view(), false, w_host.view(), true, y_ref.view(), 1.0f, 1.0f);
        expect_equal(part, y_ref.floats(), "strided f32 y against the bias copied in and gemm with beta = 1");
      }
    }
  }
}

TEST_P(LinearBias, RefusesAMissingScratchAWrongBiasAndMixedOperands) {
  LOOM_OFFERED_OR_SKIP(loom::LinearBias, op);
  DeviceTensor x = upload_zeros(DType::bf16, {4, 8}), w = upload_zeros(DType::bf16, {6, 8});
  DeviceTensor w32 = upload_zeros(DType::f32, {6, 8}), bias = upload_zeros(DType::f32, {6});
  DeviceTensor short_bias = upload_zeros(DType::f32, {5}), y = upload_zeros(DType::bf16, {4, 6});
  DeviceTensor scratch = upload_zeros(DType::f32, {4, 6});
  expect_error_naming([&] { op->linear_bias_forward(x.view(), w.view(), bias.view(), y.view(), {}); },
                      {"linear_bias_forward", "scratch"});
  expect_error_naming(
      [&] { op->linear_bias_forward(x.view(), w.view(), short_bias.view(), y.view(), scratch.view()); },
      {"linear_bias_forward", "bias"});
  expect_error_naming([&] { op->linear_bias_forward(x.view(), w32.view(), bias.view(), y.view(), scratch.view()); },
                      {"linear_bias_forward", "w"});
  DeviceTensor y16 = upload_zeros(DType::f16, {4, 6});
  expect_error_naming([&] { op->linear_bias_forward(x.view(), w.view(), bias.view(), y16.view(), scratch.view()); },
                      {"linear_bias_forward", "y", "dtype of x"});
  DeviceTensor wide = upload_zeros(DType::bf16, {4, 9});
  expect_error_naming(
      [&] { op->linear_bias_forward(x.view(), w.view(), bias.view(), wide.view().narrow(1, 0, 6), scratch.view()); },
      {"linear_bias_forward", "y", "contiguous"});
}

}  // namespace
}  // namespace loom_backend_ops
