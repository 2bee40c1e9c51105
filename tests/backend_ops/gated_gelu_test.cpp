// The gated GELU of a GeGLU layer (loom::GatedGelu, on backends that offer it), erf and tanh forms:
// against float64 references and central differences; 16-bit inputs and outputs within one
// rounding of f32 on the same values; against the reference backend over many rows in every
// dtype (bit for bit where the backend runs its code: the result does not depend on the thread
// count); with a gate of ones, bias + GELU's own values and gradients, bit for bit where the
// backend runs the reference's code (the same GELU forms); bad shapes, dtypes and overlaps named.
#include "backend_op_case.hpp"
#include "loom/sdk/ops/geglu.hpp"

namespace loom_backend_ops {
namespace {

using loom::DType;

LOOM_BACKEND_OP_FAMILY(GatedGelu);

double gelu(double v, loom::Gelu variant) {
  if (variant == loom::Gelu::erf) return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
  return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
}

const char* name_of(loom::Gelu variant) {
  return variant == loom::Gelu::erf ? "erf" : "tanh";
}

/// y[r, c] = gelu(x[r, c])·x[r, I + c] in float64, x [N, 2I].
std::vector<double> reference_gated(const std::vector<double>& x, int64_t rows, int64_t width,
                                    loom::Gelu variant) {
  std::vector<double> y(static_cast<size_t>(rows * width));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < width; ++c)
      y[r * width + c] = gelu(x[2 * r * width + c], variant) * x[2 * r * width + width + c];
  return y;
}

/// x [rows, 2·width]: the input half in [−4, 4), the gate in [−2, 2).
std::vector<float> gated_input(int64_t rows, int64_t width, uint32_t seed) {
  const std::vector<float> a = random_floats(rows * width, seed, -4, 4),
                           g = random_floats(rows * width, seed + 1, -2, 2);
  std::vector<float> x(static_cast<size_t>(2 * rows * width));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < width; ++c) {
      x[2 * r * width + c] = a[r * width + c];
      x[2 * r * width + width + c] = g[r * width + c];
    }
  return x;
}

TEST_P(GatedGelu, MatchesTheFloat64ReferenceAndCentralDifferences) {
  LOOM_OFFERED_OR_SKIP(loom::GatedGelu, op);
  const int64_t rows = 9, I = 19;
  const Tolerance value = for_this_backend(kF32AgainstFloat64, DType::f32),
                  gradient = for_this_backend(kGradientAgainstCentralDifferences, DType::f32);
  for (loom::Gelu variant : {loom::Gelu::erf, loom::Gelu::tanh}) {
    SCOPED_TRACE(name_of(variant));
    const std::vector<float> x = gated_input(rows, I, 31), w = random_floats(rows * I, 33);
    const auto xd = to_double(x);
    DeviceTensor x_dev = upload(HostTensor::of(x, DType::f32, {rows, 2 * I})),
                 dy = upload(HostTensor::of(w, DType::f32, {rows, I})),
                 y = upload_zeros(DType::f32, {rows, I}),
                 dx =
                     upload(HostTensor::of(std::vector<float>(2 * rows * I, NAN), DType::f32, {rows, 2 * I}));
    op->gated_gelu_forward(x_dev.view(), y.view(), variant);
    expect_close(read(y), reference_gated(xd, rows, I, variant), value, "y");
    op->gated_gelu_backward(dy.view(), x_dev.view(), dx.view(), variant);
    expect_close(
        read(dx),
        numeric_gradient([&](const auto& v) { return weighted_sum(reference_gated(v, rows, I, variant), w); },
                         xd),
        gradient, "dx (overwritten: it held NaN)");
  }
}

TEST_P(GatedGelu, SixteenBitStorageRoundsTheF32ResultOnce) {
  LOOM_OFFERED_OR_SKIP(loom::GatedGelu, op);
  const int64_t rows = 6, I = 33;
  for (DType storage : {DType::bf16, DType::f16})
    for (loom::Gelu variant : {loom::Gelu::erf, loom::Gelu::tanh}) {
      SCOPED_TRACE(std::string(loom::dtype_name(storage)) + " " + name_of(variant));
      const HostTensor x16 = HostTensor::of(gated_input(rows, I, 35), storage, {rows, 2 * I});
      DeviceTensor x16_dev = upload(x16),
                   x32 = upload(HostTensor::of(x16.floats(), DType::f32, {rows, 2 * I})),
                   y32 = upload_zeros(DType::f32, {rows, I}), y16 = upload_zeros(storage, {rows, I}),
                   y16_f32 = upload_zeros(DType::f32, {rows, I});
      op->gated_gelu_forward(x32.view(), y32.view(), variant);
      op->gated_gelu_forward(x16_dev.view(), y16.view(), variant);
      op->gated_gelu_forward(x16_dev.view(), y16_f32.view(), variant);
      // As for bias + GELU (activations_test.cpp): a vectorised libm lane may differ from the f32
      // loop's by an f32 ulp, which can tip an f16 rounding — one f16 ulp there.
      const Tolerance rounding =
          storage == DType::bf16 ? one_rounding(storage, 1e-6) : one_ulp(storage, 1e-7);
      expect_close(read(y16), read(y32), for_this_backend(rounding, storage), "16-bit y: one rounding");
      const Tolerance same_values =
          storage == DType::bf16 ? kSameValuesOtherStorage : kGeluLibmLanesAgainstScalar;
      expect_close(read(y16_f32), read(y32), for_this_backend(same_values, DType::f32),
                   "f32 y from a 16-bit x (the same values)");
      DeviceTensor dy = upload(HostTensor::of(random_floats(rows * I, 36), DType::f32, {rows, I})),
                   dx32 = upload_zeros(DType::f32, {rows, 2 * I}),
                   dx16 = upload_zeros(DType::f32, {rows, 2 * I});
      op->gated_gelu_backward(dy.view(), x32.view(), dx32.view(), variant);
      op->gated_gelu_backward(dy.view(), x16_dev.view(), dx16.view(), variant);
      expect_close(read(dx16), read(dx32), for_this_backend(same_values, DType::f32),
                   "dx from a 16-bit x (the same values)");
    }
}

TEST_P(GatedGelu, EveryDtypeAsTheReferenceOverManyRows) {
  LOOM_OFFERED_OR_SKIP(loom::GatedGelu, op);
  loom::GatedGelu* const reference_op = reference_offers<loom::GatedGelu>();
  ASSERT_NE(reference_op, nullptr);
  const int64_t rows = 37, I = 771;  // 28,527 outputs: the parallel path
  for (loom::Gelu variant : {loom::Gelu::erf, loom::Gelu::tanh})
    for (DType dtype : {DType::f32, DType::bf16, DType::f16})
      for (DType y_dtype :
           dtype == DType::f32 ? std::vector<DType>{DType::f32} : std::vector<DType>{dtype, DType::f32}) {
        const std::string what = std::string(name_of(variant)) + " x " + loom::dtype_name(dtype) + " y " +
                                 loom::dtype_name(y_dtype);
        HostTensor x = HostTensor::of(gated_input(rows, I, 37), dtype, {rows, 2 * I}),
                   y = HostTensor::zeros(y_dtype, {rows, I}),
                   dy = HostTensor::of(random_floats(rows * I, 39), DType::f32, {rows, I}),
                   dx = HostTensor::zeros(DType::f32, {rows, 2 * I});
        DeviceTensor x_dev = upload(x), y_dev = upload(y), dy_dev = upload(dy), dx_dev = upload(dx);
        reference_op->gated_gelu_forward(x.view(), y.view(), variant);
        reference_op->gated_gelu_backward(dy.view(), x.view(), dx.view(), variant);
        op->gated_gelu_forward(x_dev.view(), y_dev.view(), variant);
        op->gated_gelu_backward(dy_dev.view(), x_dev.view(), dx_dev.view(), variant);
        if (runs_reference_code()) {
          expect_same_bits(y_dev.download(), y, what + ": y");
          expect_same_bits(dx_dev.download(), dx, what + ": dx");
        } else {
          expect_close(read(y_dev), y.floats(), activation_across_implementations(y_dtype), what + ": y");
          expect_close(read(dx_dev), dx.floats(), kElementwiseGradientAcrossImplementations, what + ": dx");
        }
      }
}

// A gate of ones leaves gelu(a): y is bias_gelu_forward's output without a bias, da its backward's
// dx, and dg = dy·gelu(a) — the GELU forms of bias + GELU, bit for bit on the reference's code.
TEST_P(GatedGelu, AGateOfOnesIsBiasGelu) {
  LOOM_OFFERED_OR_SKIP(loom::GatedGelu, op);
  const int64_t rows = 23;
  for (int64_t I : {int64_t{768}, int64_t{771}})
    for (loom::Gelu variant : {loom::Gelu::erf, loom::Gelu::tanh}) {
      const std::string what = std::string(name_of(variant)) + " I " + std::to_string(I);
      const std::vector<float> a = random_floats(rows * I, 41, -4, 4);
      std::vector<float> x(static_cast<size_t>(2 * rows * I), 1.0f);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < I; ++c) x[2 * r * I + c] = a[r * I + c];
      DeviceTensor x_dev = upload(HostTensor::of(x, DType::f32, {rows, 2 * I})),
                   a_dev = upload(HostTensor::of(a, DType::f32, {rows, I})),
                   dy = upload(HostTensor::of(random_floats(rows * I, 42), DType::f32, {rows, I})),
                   y = upload_zeros(DType::f32, {rows, I}), gelu_a = upload_zeros(DType::f32, {rows, I}),
                   dx = upload_zeros(DType::f32, {rows, 2 * I}), da = upload_zeros(DType::f32, {rows, I});
      op->gated_gelu_forward(x_dev.view(), y.view(), variant);
      backend().bias_gelu_forward(a_dev.view(), loom::Tensor{}, gelu_a.view(), variant);
      op->gated_gelu_backward(dy.view(), x_dev.view(), dx.view(), variant);
      backend().bias_gelu_backward(dy.view(), a_dev.view(), loom::Tensor{}, da.view(), loom::Tensor{},
                                   variant);
      const std::vector<float> got = read(dx), gelu_values = read(gelu_a), dy_values = read(dy),
                               da_values = read(da);
      std::vector<float> got_da, got_dg, want_dg;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < I; ++c) {
          got_da.push_back(got[2 * r * I + c]);
          got_dg.push_back(got[2 * r * I + I + c]);
          want_dg.push_back(dy_values[r * I + c] * gelu_values[r * I + c]);
        }
      if (runs_reference_code()) {
        expect_equal(read(y), gelu_values, what + ": y");
        expect_equal(got_da, da_values, what + ": da");
        expect_equal(got_dg, want_dg, what + ": dg");
      } else {
        expect_close(read(y), gelu_values, kElementwiseAcrossImplementations, what + ": y");
        expect_close(got_da, da_values, kElementwiseGradientAcrossImplementations, what + ": da");
        expect_close(got_dg, want_dg, kElementwiseGradientAcrossImplementations, what + ": dg");
      }
    }
}

TEST_P(GatedGelu, BadShapesDtypesAndOverlapsAreNamed) {
  LOOM_OFFERED_OR_SKIP(loom::GatedGelu, op);
  DeviceTensor odd = upload_zeros(DType::f32, {4, 7}), y3 = upload_zeros(DType::f32, {4, 3});
  expect_error_naming([&] { op->gated_gelu_forward(odd.view(), y3.view(), loom::Gelu::erf); },
                      {"gated_gelu_forward", "x f32[4, 7]", "even"});
  DeviceTensor x = upload_zeros(DType::f16, {4, 8}), y_wide = upload_zeros(DType::f16, {4, 8}),
               y_bf16 = upload_zeros(DType::bf16, {4, 4}), y = upload_zeros(DType::f32, {4, 4});
  expect_error_naming([&] { op->gated_gelu_forward(x.view(), y_wide.view(), loom::Gelu::erf); },
                      {"gated_gelu_forward", "y is f16[4, 8]"});
  expect_error_naming([&] { op->gated_gelu_forward(x.view(), y_bf16.view(), loom::Gelu::tanh); },
                      {"gated_gelu_forward", "y bf16[4, 4]", "x's dtype"});
  // y over x's memory (x f32 [4, 8], y its first 16 elements as [4, 4]).
  DeviceTensor x32 = upload_zeros(DType::f32, {4, 8});
  const loom::Tensor over_x =
      loom::Tensor::contiguous(x32.view().data, DType::f32, {4, 4}, x32.view().device);
  expect_error_naming([&] { op->gated_gelu_forward(x32.view(), over_x, loom::Gelu::erf); },
                      {"gated_gelu_forward", "overlap"});

  DeviceTensor dy = upload_zeros(DType::f32, {4, 4}), dy16 = upload_zeros(DType::bf16, {4, 4}),
               dx = upload_zeros(DType::f32, {4, 8}), dx_narrow = upload_zeros(DType::f32, {4, 4});
  expect_error_naming([&] { op->gated_gelu_backward(dy16.view(), x.view(), dx.view(), loom::Gelu::erf); },
                      {"gated_gelu_backward", "dy"});
  expect_error_naming(
      [&] { op->gated_gelu_backward(dy.view(), x.view(), dx_narrow.view(), loom::Gelu::erf); },
      {"gated_gelu_backward", "dx is f32[4, 4]"});
  expect_error_naming([&] { op->gated_gelu_backward(dy.view(), x32.view(), x32.view(), loom::Gelu::erf); },
                      {"gated_gelu_backward", "dx", "x", "overlap"});
  DeviceTensor big = upload_zeros(DType::f32, {4, 8});
  const loom::Tensor dy_in_big =
      loom::Tensor::contiguous(big.view().data, DType::f32, {4, 4}, big.view().device);
  expect_error_naming([&] { op->gated_gelu_backward(dy_in_big, x.view(), big.view(), loom::Gelu::erf); },
                      {"gated_gelu_backward", "dx", "dy", "overlap"});
}

}  // namespace
}  // namespace loom_backend_ops
