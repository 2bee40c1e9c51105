// Rotary position embeddings (loom::RotaryEmbedding, on backends that offer it) on per-head views
// of [B·T, H·d] activations: against float64 rotations (with the f32 factors the header defines,
// tightly, and with exact ones) at positions up to 511 and bases from 10 to 160,000, in any order
// of thetas and lengths; the inverse
// undoing the rotation and being its gradient (central differences of the float64 reference); in
// place bit for bit out of place, also inside a fused [B·T, 3·H·d] QKV buffer whose v stays
// untouched; 16-bit storage within one rounding of f32 on the same values; an odd head dimension,
// a bad theta, another dtype and an overlapping y named.
#include <sstream>

#include "backend_op_case.hpp"
#include "loom/sdk/ops/rotary_embedding.hpp"

namespace loom_backend_ops {
namespace {

using loom::DType;
using loom::Tensor;

LOOM_BACKEND_OP_FAMILY(RotaryEmbedding);

struct Shape {
  int64_t B, H, T, d;
  int64_t numel() const { return B * T * H * d; }
  std::vector<int64_t> activation() const { return {B, T, H, d}; }  // the encoder's [B·T, H·d]
  std::string name() const {
    std::ostringstream out;
    out << "B" << B << " H" << H << " T" << T << " d" << d;
    return out.str();
  }
};

/// The [B, H, T, d] per-head view of a [B, T, H, d] activation.
Tensor heads(const Tensor& activation) {
  return activation.permute({0, 2, 1, 3});
}

/// y = R_t·x (R_tᵀ·x when `inverse`) in float64 over a [B, T, H, d] activation, pairs (i, i + d/2)
/// rotated by t·theta^(−2i/d); with `f32_factors` the cosine and sine rounded to f32 first, as the
/// op defines its factors, else exact.
std::vector<double> reference_rotary(const Shape& n, const std::vector<double>& x, double theta, bool inverse,
                                     bool f32_factors) {
  std::vector<double> y(x.size());
  const int64_t half = n.d / 2;
  for (int64_t b = 0; b < n.B; ++b)
    for (int64_t t = 0; t < n.T; ++t)
      for (int64_t h = 0; h < n.H; ++h) {
        const int64_t at = ((b * n.T + t) * n.H + h) * n.d;
        for (int64_t i = 0; i < half; ++i) {
          const double angle = static_cast<double>(t) * std::pow(theta, -2.0 * static_cast<double>(i) / n.d);
          double c = std::cos(angle), s = std::sin(angle);
          if (f32_factors) c = static_cast<float>(c), s = static_cast<float>(s);
          if (inverse) s = -s;
          const double lo = x[at + i], hi = x[at + i + half];
          y[at + i] = lo * c - hi * s;
          y[at + i + half] = hi * c + lo * s;
        }
      }
  return y;
}

TEST_P(RotaryEmbedding, MatchesTheFloat64RotationOnHeadViews) {
  LOOM_OFFERED_OR_SKIP(loom::RotaryEmbedding, op);
  const Tolerance by_f32_factors = for_this_backend(kRotationByF32Factors, DType::f32),
                  exact = for_this_backend(kF32AgainstFloat64, DType::f32);
  for (const Shape n : {Shape{2, 3, 37, 8}, Shape{1, 2, 512, 64}, Shape{2, 1, 5, 2}})
    for (const double theta : {10000.0, 160000.0, 10.0})
      for (const bool inverse : {false, true}) {
        std::ostringstream what;
        what << n.name() << " theta " << theta << (inverse ? " inverse" : "");
        SCOPED_TRACE(what.str());
        const HostTensor x = HostTensor::of(random_floats(n.numel(), 7, -2, 2), DType::f32, n.activation());
        DeviceTensor x_dev = upload(x), y = upload_zeros(DType::f32, n.activation());
        op->rotary_apply(heads(x_dev.view()), heads(y.view()), theta, inverse);
        const std::vector<float> got = read(y);
        const auto xd = to_double(x.floats());
        expect_close(got, reference_rotary(n, xd, theta, inverse, true), by_f32_factors,
                     "y (the f32 factors)");
        expect_close(got, reference_rotary(n, xd, theta, inverse, false), exact, "y (exact factors)");
        expect_same_bits(x_dev.download(), x, "x unchanged");
      }
}

// A backend may keep the factors between calls (backend/cpu keeps a few tables): whatever came
// before — a shorter sequence, other thetas, more thetas than it keeps — a call rotates by the
// factors of its own theta and length.
TEST_P(RotaryEmbedding, AnyOrderOfThetasAndLengthsRotatesByItsOwnFactors) {
  LOOM_OFFERED_OR_SKIP(loom::RotaryEmbedding, op);
  const Tolerance by_f32_factors = for_this_backend(kRotationByF32Factors, DType::f32);
  const std::pair<double, int64_t> calls[] = {{12345.0, 7},   {54321.0, 300}, {12345.0, 300}, {54321.0, 50},
                                              {1000.0, 20},   {2000.0, 20},   {3000.0, 20},   {4000.0, 20},
                                              {12345.0, 301}, {1000.0, 333},  {54321.0, 9}};
  for (const auto& [theta, T] : calls) {
    const Shape n{1, 2, T, 10};
    std::ostringstream what;
    what << "theta " << theta << " T " << T;
    SCOPED_TRACE(what.str());
    const HostTensor x = HostTensor::of(random_floats(n.numel(), 9, -2, 2), DType::f32, n.activation());
    DeviceTensor x_dev = upload(x), y = upload_zeros(DType::f32, n.activation());
    op->rotary_apply(heads(x_dev.view()), heads(y.view()), theta, false);
    expect_close(read(y), reference_rotary(n, to_double(x.floats()), theta, false, true), by_f32_factors,
                 "y");
  }
}

TEST_P(RotaryEmbedding, InverseUndoesTheRotationAndIsItsGradient) {
  LOOM_OFFERED_OR_SKIP(loom::RotaryEmbedding, op);
  const Shape n{2, 3, 41, 16};
  const HostTensor x = HostTensor::of(random_floats(n.numel(), 11, -2, 2), DType::f32, n.activation());
  DeviceTensor x_dev = upload(x), y = upload_zeros(DType::f32, n.activation()),
               z = upload_zeros(DType::f32, n.activation());
  op->rotary_apply(heads(x_dev.view()), heads(y.view()), 10000.0, false);
  op->rotary_apply(heads(y.view()), heads(z.view()), 10000.0, true);
  expect_close(read(z), x.floats(), for_this_backend(kRotationRoundTrip, DType::f32), "inverse(forward(x))");
  op->rotary_apply(heads(x_dev.view()), heads(y.view()), 10000.0, true);
  op->rotary_apply(heads(y.view()), heads(z.view()), 10000.0, false);
  expect_close(read(z), x.floats(), for_this_backend(kRotationRoundTrip, DType::f32), "forward(inverse(x))");

  // y = R·x is linear, so its gradient dx = Rᵀ·dy is the inverse rotation of dy (and the
  // inverse's gradient the rotation): against central differences of the float64 reference.
  const Shape small{2, 2, 5, 6};
  const auto xs = to_double(random_floats(small.numel(), 12, -2, 2));
  const std::vector<float> w = random_floats(small.numel(), 13);
  DeviceTensor dy = upload(HostTensor::of(w, DType::f32, small.activation())),
               dx = upload_zeros(DType::f32, small.activation());
  const Tolerance gradient = for_this_backend(kGradientAgainstCentralDifferences, DType::f32);
  for (const bool inverse : {false, true}) {
    op->rotary_apply(heads(dy.view()), heads(dx.view()), 500.0, !inverse);
    expect_close(
        read(dx),
        numeric_gradient(
            [&](const auto& v) { return weighted_sum(reference_rotary(small, v, 500.0, inverse, false), w); },
            xs),
        gradient, inverse ? "dx of the inverse" : "dx");
  }
}

TEST_P(RotaryEmbedding, InPlaceIsOutOfPlaceBitForBit) {
  LOOM_OFFERED_OR_SKIP(loom::RotaryEmbedding, op);
  const Shape n{2, 3, 29, 12};
  for (const DType dtype : {DType::f32, DType::bf16, DType::f16})
    for (const bool inverse : {false, true}) {
      const std::string what = std::string(loom::dtype_name(dtype)) + (inverse ? " inverse" : "");
      const HostTensor x = HostTensor::of(random_floats(n.numel(), 17, -2, 2), dtype, n.activation());
      DeviceTensor out_of_place = upload_zeros(dtype, n.activation()), x_dev = upload(x),
                   in_place = upload(x);
      op->rotary_apply(heads(x_dev.view()), heads(out_of_place.view()), 10000.0, inverse);
      op->rotary_apply(heads(in_place.view()), heads(in_place.view()), 10000.0, inverse);
      expect_same_bits(in_place.download(), out_of_place.download(), what + ": in place");
    }
}

// q and k rotated in place inside the [B·T, 3·H·d] buffer of a fused QKV projection, through the
// strided per-head views the encoder layer hands the op (strides T·3Hd, d, 3Hd, 1), against the
// rotation of contiguous copies; v between them is not touched. And out of place from a dense
// [B, H, T, d] tensor into the k view of such a buffer: x and y with strides of their own.
TEST_P(RotaryEmbedding, StridedViewsOfAFusedQkvBuffer) {
  LOOM_OFFERED_OR_SKIP(loom::RotaryEmbedding, op);
  const Shape n{2, 4, 23, 16};
  for (const DType dtype : {DType::f32, DType::bf16}) {
    SCOPED_TRACE(loom::dtype_name(dtype));
    const HostTensor qkv =
        HostTensor::of(random_floats(3 * n.numel(), 19, -2, 2), dtype, {n.B, n.T, 3, n.H, n.d});
    std::vector<float> k_dense(static_cast<size_t>(n.numel()));  // k's values as [B, H, T, d]
    for (int64_t b = 0; b < n.B; ++b)
      for (int64_t h = 0; h < n.H; ++h)
        for (int64_t t = 0; t < n.T; ++t)
          for (int64_t c = 0; c < n.d; ++c)
            k_dense[static_cast<size_t>(((b * n.H + h) * n.T + t) * n.d + c)] =
                qkv.get(((b * n.T + t) * 3 + 1) * n.H * n.d + h * n.d + c);
    DeviceTensor qkv_dev = upload(qkv), into = upload(qkv),
                 dense = upload(HostTensor::of(k_dense, dtype, {n.B, n.H, n.T, n.d}));
    const Tensor fused = qkv_dev.view();
    for (const int part : {0, 1})
      op->rotary_apply(heads(fused.select(2, part)), heads(fused.select(2, part)), 10000.0, false);
    op->rotary_apply(dense.view(), heads(into.view().select(2, 1)), 10000.0, false);
    const HostTensor got = qkv_dev.download(), got_into = into.download();
    for (const int part : {0, 1, 2}) {
      // The part's values, contiguous: the elements of qkv at [b, t, part, h, c].
      std::vector<float> values(static_cast<size_t>(n.numel()));
      for (int64_t row = 0; row < n.B * n.T; ++row)
        for (int64_t e = 0; e < n.H * n.d; ++e)
          values[static_cast<size_t>(row * n.H * n.d + e)] = qkv.get((row * 3 + part) * n.H * n.d + e);
      DeviceTensor contiguous = upload(HostTensor::of(values, dtype, n.activation())),
                   rotated = upload_zeros(dtype, n.activation());
      HostTensor want = contiguous.download();
      if (part < 2) {
        op->rotary_apply(heads(contiguous.view()), heads(rotated.view()), 10000.0, false);
        want = rotated.download();
      }
      for (int64_t row = 0; row < n.B * n.T; ++row)
        expect_same_bits(got, (row * 3 + part) * n.H * n.d, want, row * n.H * n.d, n.H * n.d,
                         part == 0   ? "q"
                         : part == 1 ? "k"
                                     : "v (untouched)");
      for (int64_t row = 0; row < n.B * n.T; ++row)  // k rotated into its view, q and v as they were
        expect_same_bits(got_into, (row * 3 + part) * n.H * n.d, part == 1 ? want : contiguous.download(),
                         row * n.H * n.d, n.H * n.d, "from a dense [B, H, T, d] x into the buffer's k view");
    }
  }
}

TEST_P(RotaryEmbedding, SixteenBitStorageIsTheF32RotationRoundedOnce) {
  LOOM_OFFERED_OR_SKIP(loom::RotaryEmbedding, op);
  const Shape n{2, 2, 130, 32};
  for (const DType dtype : {DType::bf16, DType::f16}) {
    SCOPED_TRACE(loom::dtype_name(dtype));
    const HostTensor x16 = HostTensor::of(random_floats(n.numel(), 23, -2, 2), dtype, n.activation());
    DeviceTensor x16_dev = upload(x16),
                 x32 = upload(HostTensor::of(x16.floats(), DType::f32, n.activation())),
                 y16 = upload_zeros(dtype, n.activation()), y32 = upload_zeros(DType::f32, n.activation()),
                 z16 = upload_zeros(dtype, n.activation());
    op->rotary_apply(heads(x16_dev.view()), heads(y16.view()), 10000.0, false);
    op->rotary_apply(heads(x32.view()), heads(y32.view()), 10000.0, false);
    expect_close(read(y16), read(y32), for_this_backend(one_rounding(dtype), dtype),
                 "y: one rounding of f32's");
    // Undone from the rounded y: that rounding (≤ u·|pair| ≤ 2.9u, rotated: ≤ 4u) and z's own.
    op->rotary_apply(heads(y16.view()), heads(z16.view()), 10000.0, true);
    const double u = unit_roundoff(dtype);
    expect_close(read(z16), x16.floats(), for_this_backend(Tolerance{u, 5 * u}, dtype),
                 "inverse(forward(x))");
  }
}

TEST_P(RotaryEmbedding, AnOddHeadDimensionAndOtherBadArgumentsAreNamed) {
  LOOM_OFFERED_OR_SKIP(loom::RotaryEmbedding, op);
  const Shape odd{1, 2, 4, 5};
  DeviceTensor x = upload_zeros(DType::f32, odd.activation()), y = upload_zeros(DType::f32, odd.activation());
  expect_error_naming([&] { op->rotary_apply(heads(x.view()), heads(y.view()), 10000.0, false); },
                      {"rotary_apply", "x f32[1, 2, 4, 5]", "d = 5", "even"});
  const Shape n{1, 2, 4, 8};
  DeviceTensor a = upload_zeros(DType::f32, n.activation()), b16 = upload_zeros(DType::bf16, n.activation()),
               wide = upload_zeros(DType::f32, {n.B, n.T, n.H, 2 * n.d});
  for (const double theta : {0.0, -1.0, static_cast<double>(INFINITY)})
    expect_error_naming([&] { op->rotary_apply(heads(a.view()), heads(a.view()), theta, false); },
                        {"rotary_apply", "theta"});
  expect_error_naming([&] { op->rotary_apply(heads(a.view()), heads(b16.view()), 10000.0, false); },
                      {"rotary_apply", "y", "dtype"});
  // y half a head past x in one buffer: the same extents, overlapping but not x.
  const Tensor first = wide.view().narrow(3, 0, n.d), shifted = wide.view().narrow(3, n.d / 2, n.d);
  expect_error_naming([&] { op->rotary_apply(heads(first), heads(shifted), 10000.0, false); },
                      {"rotary_apply", "overlap"});
  DeviceTensor narrow = upload_zeros(DType::f32, {n.B, n.T, n.H, n.d - 2});
  expect_error_naming([&] { op->rotary_apply(heads(a.view()), heads(narrow.view()), 10000.0, false); },
                      {"rotary_apply", "y is f32[1, 2, 4, 6]"});
}

}  // namespace
}  // namespace loom_backend_ops
