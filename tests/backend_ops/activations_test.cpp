// Bias, activations and the residual add: bias_add and bias_grad (with a period), bias + GELU (erf
// and tanh) forward and backward, tanh, add and axpby — against float64 references and central
// differences, 16-bit storage against f32 (one rounding of the output), and against the reference
// backend at odd sizes, with and without a bias, in place and over many rows; bias + GELU backward
// with its 16-bit copy (BiasGeluBackwardCopy) against the op and a cast.
#include "backend_op_case.hpp"
#include "loom/sdk/ops/bias_gelu_backward_copy.hpp"
#include "loom/sdk/ops/bias_grad_copy.hpp"

namespace loom_backend_ops {
namespace {

using loom::DType;

LOOM_BACKEND_OP_FAMILY(Activations);

const DType kFloatTypes[] = {DType::f32, DType::bf16, DType::f16};

double gelu(double v, loom::Gelu variant) {
  if (variant == loom::Gelu::erf) return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
  return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
}

std::vector<double> reference_bias_gelu(const std::vector<double>& x, const std::vector<double>& bias,
                                        int64_t cols, loom::Gelu variant) {
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = gelu(x[i] + (bias.empty() ? 0.0 : bias[i % cols]), variant);
  return y;
}

const char* name_of(loom::Gelu variant) {
  return variant == loom::Gelu::erf ? "erf" : "tanh";
}

TEST_P(Activations, BiasGeluMatchesFloat64ReferenceAndCentralDifferences) {
  const int64_t rows = 9, C = 19;
  const Tolerance value = for_this_backend(kF32AgainstFloat64, DType::f32),
                  gradient = for_this_backend(kGradientAgainstCentralDifferences, DType::f32);
  for (loom::Gelu variant : {loom::Gelu::erf, loom::Gelu::tanh}) {
    SCOPED_TRACE(name_of(variant));
    const auto x = random_floats(rows * C, 51, -4, 4), bias = random_floats(C, 52),
               w = random_floats(rows * C, 53);
    const auto xd = to_double(x), bd = to_double(bias);
    DeviceTensor x_dev = upload(HostTensor::of(x, DType::f32, {rows, C})),
                 bias_dev = upload(HostTensor::of(bias, DType::f32, {C})),
                 w_dev = upload(HostTensor::of(w, DType::f32, {rows, C})),
                 y = upload_zeros(DType::f32, {rows, C}), dx = upload_zeros(DType::f32, {rows, C}),
                 dbias = upload(HostTensor::of(std::vector<float>(C, 0.5f), DType::f32, {C}));
    backend().bias_gelu_forward(x_dev.view(), bias_dev.view(), y.view(), variant);
    expect_close(read(y), reference_bias_gelu(xd, bd, C, variant), value, "y");
    backend().bias_gelu_backward(w_dev.view(), x_dev.view(), bias_dev.view(), dx.view(), dbias.view(),
                                 variant);
    expect_close(
        read(dx),
        numeric_gradient(
            [&](const auto& v) { return weighted_sum(reference_bias_gelu(v, bd, C, variant), w); }, xd),
        gradient, "dx");
    const auto db_expected = numeric_gradient(
        [&](const auto& v) { return weighted_sum(reference_bias_gelu(xd, v, C, variant), w); }, bd);
    expect_close(read(dbias), plus(db_expected, 0.5), gradient, "dbias accumulated onto 0.5");

    // Without a bias: plain GELU, and dx may alias dy.
    DeviceTensor y0 = upload_zeros(DType::f32, {rows, C}),
                 g = upload(HostTensor::of(w, DType::f32, {rows, C}));
    backend().bias_gelu_forward(x_dev.view(), loom::Tensor{}, y0.view(), variant);
    expect_close(read(y0), reference_bias_gelu(xd, {}, C, variant), value, "plain gelu");
    backend().bias_gelu_backward(g.view(), x_dev.view(), loom::Tensor{}, g.view(), loom::Tensor{}, variant);
    expect_close(
        read(g),
        numeric_gradient(
            [&](const auto& v) { return weighted_sum(reference_bias_gelu(v, {}, C, variant), w); }, xd),
        gradient, "plain gelu dx in place");
  }
}

TEST_P(Activations, BiasGeluOn16BitStorageRoundsTheF32ResultOnce) {
  for (DType storage : {DType::bf16, DType::f16})
    for (loom::Gelu variant : {loom::Gelu::erf, loom::Gelu::tanh}) {
      SCOPED_TRACE(std::string(loom::dtype_name(storage)) + " " + name_of(variant));
      const int64_t rows = 6, C = 33;
      // x is 16-bit; xr the same values in f32.
      const HostTensor x16 = HostTensor::of(random_floats(rows * C, 54, -3, 3), storage, {rows, C});
      DeviceTensor x16_dev = upload(x16), xr = upload(HostTensor::of(x16.floats(), DType::f32, {rows, C})),
                   bias = upload(HostTensor::of(random_floats(C, 55), DType::f32, {C})),
                   y = upload_zeros(DType::f32, {rows, C}), y16 = upload_zeros(storage, {rows, C});
      backend().bias_gelu_forward(xr.view(), bias.view(), y.view(), variant);
      backend().bias_gelu_forward(x16_dev.view(), bias.view(), y16.view(), variant);
      // erf comes from a vectorised libm on backend/cpu whose lanes may differ from the f32 loop's
      // by an f32 ulp, which can tip an f16 rounding: one f16 ulp there.
      const Tolerance rounding =
          storage == DType::bf16 ? one_rounding(storage, 1e-6) : one_ulp(storage, 1e-7);
      expect_close(read(y16), read(y), for_this_backend(rounding, storage), "16-bit output: one rounding");
      // The backward from a saved bf16 input. On f16 storage backend/cpu's GELU derivative differs
      // from the f32 one by up to ~4e-7 (measured), an f32 ulp or two of erf magnified where the
      // derivative crosses zero, so that pair is held to the forward's bound only.
      if (storage != DType::bf16) continue;
      DeviceTensor dy = upload(HostTensor::of(random_floats(rows * C, 56), DType::f32, {rows, C})),
                   dx = upload_zeros(DType::f32, {rows, C}), dx16 = upload_zeros(DType::f32, {rows, C});
      backend().bias_gelu_backward(dy.view(), xr.view(), bias.view(), dx.view(), loom::Tensor{}, variant);
      backend().bias_gelu_backward(dy.view(), x16_dev.view(), bias.view(), dx16.view(), loom::Tensor{},
                                   variant);
      expect_close(read(dx16), read(dx), for_this_backend(kSameValuesOtherStorage, DType::f32),
                   "16-bit saved input (the same values)");
    }
}

TEST_P(Activations, BiasGeluEveryDtypeAsTheReference) {
  const int64_t rows = 37, cols = 771;
  for (loom::Gelu variant : {loom::Gelu::erf, loom::Gelu::tanh})
    for (DType dtype : kFloatTypes)
      for (bool with_bias : {true, false}) {
        const std::string what = std::string("gelu ") + name_of(variant) + " " + loom::dtype_name(dtype) +
                                 (with_bias ? " bias" : "");
        HostTensor x = HostTensor::of(random_floats(rows * cols, 3, -4.0f, 4.0f), dtype, {rows, cols});
        HostTensor bias = HostTensor::of(random_floats(cols, 4), DType::f32, {cols});
        HostTensor y = HostTensor::zeros(dtype, {rows, cols});
        DeviceTensor x_dev = upload(x), bias_dev = upload(bias), y_dev = upload(y);
        const loom::Tensor b_ref = with_bias ? bias.view() : loom::Tensor{};
        const loom::Tensor b_dev = with_bias ? bias_dev.view() : loom::Tensor{};
        reference().bias_gelu_forward(x.view(), b_ref, y.view(), variant);
        backend().bias_gelu_forward(x_dev.view(), b_dev, y_dev.view(), variant);
        expect_close(read(y_dev), y.floats(), activation_across_implementations(dtype), what);

        HostTensor dy = HostTensor::of(random_floats(rows * cols, 5), DType::f32, {rows, cols});
        HostTensor dx = HostTensor::zeros(DType::f32, {rows, cols});
        HostTensor dbias = HostTensor::of(random_floats(cols, 6), DType::f32, {cols});
        DeviceTensor dy_dev = upload(dy), dx_dev = upload(dx), dbias_dev = upload(dbias);
        reference().bias_gelu_backward(dy.view(), x.view(), b_ref, dx.view(),
                                       with_bias ? dbias.view() : loom::Tensor{}, variant);
        backend().bias_gelu_backward(dy_dev.view(), x_dev.view(), b_dev, dx_dev.view(),
                                     with_bias ? dbias_dev.view() : loom::Tensor{}, variant);
        expect_close(read(dx_dev), dx.floats(), kElementwiseGradientAcrossImplementations, what + " dx");
        expect_close(read(dbias_dev), dbias.floats(), kColumnSumsAcrossImplementations, what + " dbias");
      }
}

// BiasGeluBackwardCopy: dx, dbias bit for bit bias_gelu_backward's on the same backend, and
// dx_compute the bits of cast(dx) there — at a width the vectorized path takes (768) and one it
// does not (771), dx aliasing dy, separate or absent (then dbias and dx_compute as with it), with
// and without dbias; a copy that is not 16-bit, or aliases dx, is refused.
TEST_P(Activations, BiasGeluBackwardCopyIsTheOpThenTheCast) {
  LOOM_OFFERED_OR_SKIP(loom::BiasGeluBackwardCopy, op);
  enum class Dx { separate, aliasing_dy, absent };
  const int64_t rows = 23;
  for (int64_t cols : {int64_t{768}, int64_t{771}})
    for (DType copy_dtype : {DType::bf16, DType::f16})
      for (Dx dx_kind : {Dx::separate, Dx::aliasing_dy, Dx::absent})
        for (bool with_dbias : {true, false}) {
          const std::string what = std::to_string(cols) + " columns, " + loom::dtype_name(copy_dtype) +
                                   (dx_kind == Dx::aliasing_dy ? ", dx aliasing dy"
                                    : dx_kind == Dx::absent    ? ", no dx"
                                                               : "") +
                                   (with_dbias ? "" : ", no dbias");
          const HostTensor x = HostTensor::of(random_floats(rows * cols, 61, -4.0f, 4.0f), DType::bf16, {rows, cols});
          const HostTensor bias = HostTensor::of(random_floats(cols, 62), DType::f32, {cols});
          const HostTensor dy = HostTensor::of(random_floats(rows * cols, 63), DType::f32, {rows, cols});
          const HostTensor dbias0 = HostTensor::of(random_floats(cols, 64), DType::f32, {cols});
          DeviceTensor x_dev = upload(x), b_dev = upload(bias);
          // The separate ops on this backend.
          DeviceTensor dy_a = upload(dy), dx_a = upload_zeros(DType::f32, {rows, cols}), dbias_a = upload(dbias0);
          DeviceTensor copy_a = upload_zeros(copy_dtype, {rows, cols});
          backend().bias_gelu_backward(dy_a.view(), x_dev.view(), b_dev.view(), dx_a.view(),
                                       with_dbias ? dbias_a.view() : loom::Tensor{}, loom::Gelu::erf);
          backend().cast(dx_a.view(), copy_a.view());
          // The op.
          DeviceTensor dy_b = upload(dy), dx_b = upload_zeros(DType::f32, {rows, cols}), dbias_b = upload(dbias0);
          DeviceTensor copy_b = upload_zeros(copy_dtype, {rows, cols});
          const loom::Tensor dx_view = dx_kind == Dx::separate    ? dx_b.view()
                                       : dx_kind == Dx::aliasing_dy ? dy_b.view()
                                                                    : loom::Tensor{};
          op->bias_gelu_backward_copy(dy_b.view(), x_dev.view(), b_dev.view(), dx_view, copy_b.view(),
                                      with_dbias ? dbias_b.view() : loom::Tensor{}, loom::Gelu::erf);
          if (dx_kind != Dx::absent)
            expect_same_bits((dx_kind == Dx::aliasing_dy ? dy_b : dx_b).download(), dx_a.download(), what + ": dx");
          expect_same_bits(dbias_b.download(), dbias_a.download(), what + ": dbias");
          expect_same_bits(copy_b.download(), copy_a.download(), what + ": dx_compute");
        }
  DeviceTensor t = upload_zeros(DType::f32, {4, 8}), x16 = upload_zeros(DType::bf16, {4, 8});
  DeviceTensor f32_copy = upload_zeros(DType::f32, {4, 8});
  expect_error_naming(
      [&] { op->bias_gelu_backward_copy(t.view(), x16.view(), {}, t.view(), f32_copy.view(), {}, loom::Gelu::erf); },
      {"bias_gelu_backward_copy", "dx_compute"});
  expect_error_naming(
      [&] { op->bias_gelu_backward_copy(t.view(), x16.view(), {}, t.view(), x16.view(), {}, loom::Gelu::erf); },
      {"bias_gelu_backward_copy", "alias"});
}

// BiasGradCopy: dbias bit for bit bias_grad's on the same backend, and dy_compute the bits of
// cast(dy) there — at widths of 768 and 771, with a [C] and a [P, C] bias (period 5); a copy that
// is not 16-bit, or aliases dy, is refused.
TEST_P(Activations, BiasGradCopyIsBiasGradThenTheCast) {
  LOOM_OFFERED_OR_SKIP(loom::BiasGradCopy, op);
  const int64_t rows = 35;
  for (int64_t cols : {int64_t{768}, int64_t{771}})
    for (int64_t period : {int64_t{1}, int64_t{5}})
      for (DType copy_dtype : {DType::bf16, DType::f16}) {
        const std::string what = std::to_string(cols) + " columns, period " + std::to_string(period) + ", " +
                                 loom::dtype_name(copy_dtype);
        const HostTensor dy = HostTensor::of(random_floats(rows * cols, 71, -3.0f, 3.0f), DType::f32, {rows, cols});
        const std::vector<int64_t> bias_shape =
            period == 1 ? std::vector<int64_t>{cols} : std::vector<int64_t>{period, cols};
        const HostTensor dbias0 = HostTensor::of(random_floats(period * cols, 72), DType::f32, bias_shape);
        DeviceTensor dy_dev = upload(dy);
        DeviceTensor dbias_a = upload(dbias0), copy_a = upload_zeros(copy_dtype, {rows, cols});
        backend().bias_grad(dy_dev.view(), dbias_a.view());
        backend().cast(dy_dev.view(), copy_a.view());
        DeviceTensor dbias_b = upload(dbias0), copy_b = upload_zeros(copy_dtype, {rows, cols});
        op->bias_grad_copy(dy_dev.view(), dbias_b.view(), copy_b.view());
        expect_same_bits(dbias_b.download(), dbias_a.download(), what + ": dbias");
        expect_same_bits(copy_b.download(), copy_a.download(), what + ": dy_compute");
        expect_same_bits(dy_dev.download(), dy, what + ": dy unchanged");
      }
  DeviceTensor t = upload_zeros(DType::f32, {4, 8}), bias = upload_zeros(DType::f32, {8});
  DeviceTensor f32_copy = upload_zeros(DType::f32, {4, 8});
  const loom::Tensor over_dy = loom::Tensor::contiguous(t.view().data, DType::bf16, {4, 8}, t.view().device);
  expect_error_naming([&] { op->bias_grad_copy(t.view(), bias.view(), f32_copy.view()); },
                      {"bias_grad_copy", "dy_compute"});
  expect_error_naming([&] { op->bias_grad_copy(t.view(), bias.view(), over_dy); },
                      {"bias_grad_copy", "dy_compute may not alias"});
}

TEST_P(Activations, GeluInPlaceAndBackwardAliasingDy) {
  const int64_t rows = 5, cols = 131;
  HostTensor x = HostTensor::of(random_floats(rows * cols, 7, -3.0f, 3.0f), DType::f32, {rows, cols});
  HostTensor y = HostTensor::zeros(DType::f32, {rows, cols});
  reference().bias_gelu_forward(x.view(), loom::Tensor{}, y.view(), loom::Gelu::erf);
  DeviceTensor x_dev = upload(x);
  backend().bias_gelu_forward(x_dev.view(), loom::Tensor{}, x_dev.view(), loom::Gelu::erf);
  expect_close(read(x_dev), y.floats(), kElementwiseAcrossImplementations, "gelu in place");
  HostTensor dy = HostTensor::of(random_floats(rows * cols, 8), DType::f32, {rows, cols});
  HostTensor dx = HostTensor::zeros(DType::f32, {rows, cols});
  reference().bias_gelu_backward(dy.view(), x.view(), loom::Tensor{}, dx.view(), loom::Tensor{},
                                 loom::Gelu::tanh);
  DeviceTensor dy_dev = upload(dy), x2 = upload(x);
  backend().bias_gelu_backward(dy_dev.view(), x2.view(), loom::Tensor{}, dy_dev.view(), loom::Tensor{},
                               loom::Gelu::tanh);
  expect_close(read(dy_dev), dx.floats(), kElementwiseAcrossImplementations, "gelu backward dx aliasing dy");
}

TEST_P(Activations, TanhMatchesFloat64ReferenceAndCentralDifferences) {
  const int64_t n = 29;
  const auto x = random_floats(n, 57, -3, 3), w = random_floats(n, 58);
  DeviceTensor x_dev = upload(HostTensor::of(x, DType::f32, {n})),
               w_dev = upload(HostTensor::of(w, DType::f32, {n})), y = upload_zeros(DType::f32, {n}),
               dx = upload_zeros(DType::f32, {n});
  backend().tanh_forward(x_dev.view(), y.view());
  const auto xd = to_double(x);
  const auto ref = [&](const std::vector<double>& v) {
    std::vector<double> out(v.size());
    for (size_t i = 0; i < v.size(); ++i) out[i] = std::tanh(v[i]);
    return out;
  };
  expect_close(read(y), ref(xd), for_this_backend(kOneLibmCallAgainstFloat64, DType::f32), "tanh");
  backend().tanh_backward(w_dev.view(), y.view(), dx.view());
  expect_close(read(dx), numeric_gradient([&](const auto& v) { return weighted_sum(ref(v), w); }, xd),
               for_this_backend(kOneLibmCallGradient, DType::f32), "dx");
}

TEST_P(Activations, PeriodicBiasAddsPositionRowsAndGradientSumsThem) {
  // x [B, T, C] += wpe[0:T]: bias_add with a [T, C] bias; its gradient is bias_grad with [T, C].
  const int64_t B = 3, T = 5, C = 7;
  const auto x = random_floats(B * T * C, 59), wpe = random_floats(T * C, 60),
             dy = random_floats(B * T * C, 61);
  std::vector<double> expected = to_double(x), dwpe_expected(T * C, 1.0), dbias_expected(C, 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t < T; ++t)
      for (int64_t c = 0; c < C; ++c) {
        expected[(b * T + t) * C + c] += wpe[t * C + c];
        dwpe_expected[t * C + c] += dy[(b * T + t) * C + c];
        dbias_expected[c] += dy[(b * T + t) * C + c];
      }
  DeviceTensor x_dev = upload(HostTensor::of(x, DType::f32, {B, T, C})),
               wpe_dev = upload(HostTensor::of(wpe, DType::f32, {T, C})),
               dy_dev = upload(HostTensor::of(dy, DType::f32, {B, T, C})),
               dwpe = upload(HostTensor::of(std::vector<float>(T * C, 1.0f), DType::f32, {T, C})),
               dbias = upload_zeros(DType::f32, {C});
  backend().bias_add(x_dev.view(), wpe_dev.view());
  expect_close(read(x_dev), expected, kOneAdditionAgainstFloat64, "x + wpe");
  backend().bias_grad(dy_dev.view(), dwpe.view());
  backend().bias_grad(dy_dev.view(), dbias.view());
  expect_close(read(dwpe), dwpe_expected, kShortSumAgainstFloat64, "dwpe accumulated onto 1");
  expect_close(read(dbias), dbias_expected, kShortSumAgainstFloat64, "column sums");
}

TEST_P(Activations, BiasAddAndBiasGradWithPeriodAsTheReference) {
  const int64_t rows = 131;
  for (int64_t cols : {int64_t{771}, int64_t{768}})  // C % 4 ≠ 0 and = 0 (vectorised paths)
    for (int64_t period : {int64_t{1}, int64_t{131}}) {
      SCOPED_TRACE("C " + std::to_string(cols) + " period " + std::to_string(period));
      HostTensor x = HostTensor::of(random_floats(rows * cols, 1), DType::f32, {rows, cols});
      HostTensor bias = period == 1
                            ? HostTensor::of(random_floats(cols, 2), DType::f32, {cols})
                            : HostTensor::of(random_floats(period * cols, 2), DType::f32, {period, cols});
      DeviceTensor x_dev = upload(x), bias_dev = upload(bias);
      reference().bias_add(x.view(), bias.view());
      backend().bias_add(x_dev.view(), bias_dev.view());
      expect_close(read(x_dev), x.floats(), kExact, "bias_add");
      // bias_grad accumulates into a non-zero dbias.
      HostTensor dbias = bias;
      DeviceTensor dbias_dev = upload(dbias);
      reference().bias_grad(x.view(), dbias.view());
      backend().bias_grad(x_dev.view(), dbias_dev.view());
      const std::vector<float> first = read(dbias_dev);
      expect_close(first, dbias.floats(), kColumnSumsAcrossImplementations, "bias_grad");
      // Deterministic: the same sum again gives the same bits.
      DeviceTensor again = upload(bias);
      backend().bias_grad(x_dev.view(), again.view());
      expect_equal(read(again), first, "bias_grad rerun");
    }
  // Many rows: several row tiles in a two-pass reduction.
  HostTensor big = HostTensor::of(random_floats(1500 * 37, 9), DType::f32, {1500, 37});
  HostTensor dbias = HostTensor::zeros(DType::f32, {37});
  DeviceTensor big_dev = upload(big), dbias_dev = upload(dbias);
  reference().bias_grad(big.view(), dbias.view());
  backend().bias_grad(big_dev.view(), dbias_dev.view());
  expect_close(read(dbias_dev), dbias.floats(), kColumnSumsAcrossImplementations, "bias_grad 1500 rows");
  // More rows than 1024 tiles of 256.
  const int64_t tall = 300007;
  HostTensor tall_x = HostTensor::of(random_floats(tall * 5, 10), DType::f32, {tall, 5});
  HostTensor tall_dbias = HostTensor::zeros(DType::f32, {5});
  DeviceTensor tall_x_dev = upload(tall_x), tall_dbias_dev = upload(tall_dbias);
  reference().bias_grad(tall_x.view(), tall_dbias.view());
  backend().bias_grad(tall_x_dev.view(), tall_dbias_dev.view());
  expect_close(read(tall_dbias_dev), tall_dbias.floats(), kTallColumnSums, "bias_grad 300007 rows");
}

TEST_P(Activations, TanhAsTheReference) {
  const int64_t n = 768 + 3;
  HostTensor x = HostTensor::of(random_floats(n, 1, -3.0f, 3.0f), DType::f32, {n});
  HostTensor y = HostTensor::zeros(DType::f32, {n});
  DeviceTensor x_dev = upload(x), y_dev = upload(y);
  reference().tanh_forward(x.view(), y.view());
  backend().tanh_forward(x_dev.view(), y_dev.view());
  expect_close(read(y_dev), y.floats(), kOneLibmCallAcrossImplementations, "tanh_forward");
  HostTensor dy = HostTensor::of(random_floats(n, 2), DType::f32, {n});
  HostTensor dx = HostTensor::zeros(DType::f32, {n});
  DeviceTensor dy_dev = upload(dy), dx_dev = upload(dx);
  reference().tanh_backward(dy.view(), y.view(), dx.view());
  backend().tanh_backward(dy_dev.view(), y_dev.view(), dx_dev.view());
  expect_close(read(dx_dev), dx.floats(), kElementwiseAcrossImplementations, "tanh_backward");
}

TEST_P(Activations, AddIsExactAndAxpbyBlendsAsTheReference) {
  const int64_t n = 768 + 3;
  for (DType a_type : kFloatTypes)
    for (DType out_type : {DType::f32, DType::bf16}) {
      HostTensor a = HostTensor::of(random_floats(n, 3), a_type, {n});
      HostTensor b = HostTensor::of(random_floats(n, 4), DType::f32, {n});
      HostTensor out = HostTensor::zeros(out_type, {n});
      DeviceTensor a_dev = upload(a), b_dev = upload(b), out_dev = upload(out);
      reference().add(a.view(), b.view(), out.view());
      backend().add(a_dev.view(), b_dev.view(), out_dev.view());
      const HostTensor sum = out_dev.download();
      expect_same_bits(sum, out,
                       std::string("add ") + loom::dtype_name(a_type) + " → " + loom::dtype_name(out_type));
      // One rounding of the exact f32 sum.
      expect_same_bits(sum,
                       HostTensor::of(
                           [&] {
                             std::vector<float> s(n);
                             for (int64_t i = 0; i < n; ++i) s[i] = a.get(i) + b.get(i);
                             return s;
                           }(),
                           out_type, {n}),
                       "add: the f32 sum rounded once");
    }
  // f16 + f16 → f16: 2·x rounded once.
  HostTensor x16 = HostTensor::of(random_floats(240, 27, -3.0f, 3.0f), DType::f16, {6, 40});
  DeviceTensor x16_dev = upload(x16), sum16 = upload_zeros(DType::f16, {6, 40});
  backend().add(x16_dev.view(), x16_dev.view(), sum16.view());
  std::vector<float> doubled = x16.floats();
  for (float& v : doubled) v *= 2;
  expect_same_bits(sum16.download(), HostTensor::of(doubled, DType::f16, {6, 40}), "f16 add");

  // axpby: aligned (n % 4 = 3 leaves a tail), beta = 0 (never reads y: NaN there is ignored).
  HostTensor x = HostTensor::of(random_floats(n, 1, -3.0f, 3.0f), DType::f32, {n});
  DeviceTensor x_dev = upload(x);
  for (float beta : {0.5f, 0.0f}) {
    HostTensor y = HostTensor::of(random_floats(n, 5), DType::f32, {n});
    DeviceTensor y_dev = upload(y);
    reference().axpby(1.5f, x.view(), beta, y.view());
    backend().axpby(1.5f, x_dev.view(), beta, y_dev.view());
    expect_close(read(y_dev), y.floats(), kOneFmaAcrossImplementations, "axpby beta " + std::to_string(beta));
  }
  const auto a = random_floats(40, 62), b = random_floats(40, 63);
  DeviceTensor a_dev = upload(HostTensor::of(a, DType::f32, {40})),
               blend = upload(HostTensor::of(b, DType::f32, {40})),
               nan_y = upload(HostTensor::of(std::vector<float>(40, NAN), DType::f32, {40}));
  backend().axpby(2.0f, a_dev.view(), -0.5f, blend.view());
  backend().axpby(3.0f, a_dev.view(), 0.0f, nan_y.view());
  const std::vector<float> blended = read(blend), scaled = read(nan_y);
  for (int64_t i = 0; i < 40; ++i) {
    EXPECT_FLOAT_EQ(blended[i], 2.0f * a[i] - 0.5f * b[i]);
    EXPECT_FLOAT_EQ(scaled[i], 3.0f * a[i]) << "beta = 0 ignores the NaN in y";
  }
  // Views one element past their start (another alignment), and x aliasing y.
  HostTensor z = HostTensor::of(random_floats(n, 6), DType::f32, {n});
  DeviceTensor z_dev = upload(z);
  reference().axpby(2.0f, x.view().narrow(0, 1, n - 1), 1.0f, z.view().narrow(0, 1, n - 1));
  backend().axpby(2.0f, x_dev.view().narrow(0, 1, n - 1), 1.0f, z_dev.view().narrow(0, 1, n - 1));
  expect_close(read(z_dev), z.floats(), kOneFmaAcrossImplementations, "axpby on views one element in");
  backend().axpby(2.0f, z_dev.view(), 1.0f, z_dev.view());
  reference().axpby(2.0f, z.view(), 1.0f, z.view());
  expect_close(read(z_dev), z.floats(), kOneFmaAcrossImplementations, "axpby x aliasing y");
}

}  // namespace
}  // namespace loom_backend_ops
