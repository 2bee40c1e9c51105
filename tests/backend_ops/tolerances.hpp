// Every tolerance the cases use, in one place, each with why. A comparison passes when
// |actual − expected| ≤ atol + rtol·|expected| for every element (checks.hpp).
//
// They come from the dtype a result is stored in — its unit roundoff u (f32 2^-24, bf16 2^-8,
// f16 2^-11) — and from what is compared:
// - one rounding of an f32 result to a 16-bit dtype: rtol u; one ulp (two roundings, or an f32
//   result one f32 ulp apart before rounding): rtol 2u;
// - an f32 result against its float64 reference, or a gradient against central differences of it
//   (h = 1e-6, the difference quotient's own error ~1e-10): the named bounds below, set where
//   backend/cpu's loops have always been, with the margin each comment gives;
// - a result of one backend against the same op on backend/cpu: the two round in a different
//   order (tree reductions, tiles, library kernels), which across_implementations() bounds for a
//   result computed in f32 and stored in a dtype, and the named bounds for sums whose rounding
//   grows with their length.
// A case checking a backend against a float64 reference uses the bound backend/cpu meets; on a
// backend that is not backend/cpu's code it adds across_implementations() (the triangle
// inequality: that backend is within it of backend/cpu, which is within the bound of the truth).
#pragma once

#include <cmath>
#include <cstdint>

#include "loom/sdk/tensor.hpp"

namespace loom_backend_ops {

struct Tolerance {
  double rtol = 0, atol = 0;
  Tolerance operator+(Tolerance other) const { return {rtol + other.rtol, atol + other.atol}; }
};

/// Exactly equal (as values; bit-for-bit checks use expect_equal or expect_same_bits).
inline constexpr Tolerance kExact{0, 0};

/// Half an ulp relative: f32 2^-24, bf16 2^-8, f16 2^-11 (integers: 0).
inline double unit_roundoff(loom::DType dtype) {
  switch (dtype) {
    case loom::DType::f32:
      return std::ldexp(1.0, -24);
    case loom::DType::bf16:
      return std::ldexp(1.0, -8);
    case loom::DType::f16:
      return std::ldexp(1.0, -11);
    default:
      return 0;
  }
}

/// An f32 result rounded once to `dtype`, against the f32 result.
inline Tolerance one_rounding(loom::DType dtype, double atol = 0) {
  return {unit_roundoff(dtype), atol};
}

/// One ulp of `dtype`: both sides rounded, or the f32 results an f32 ulp apart before one rounding
/// (a vectorised libm lane against a scalar loop can tip a tie).
inline Tolerance one_ulp(loom::DType dtype, double atol = 0) {
  return {2 * unit_roundoff(dtype), atol};
}

/// Two implementations of one op computing in f32 and storing `dtype`: the sums and libm calls of
/// each round in their own order, then the result is rounded to `dtype` on each side — f32 2e-5
/// (~300 ulp, sums of up to a few thousand terms), bf16 1e-2 and f16 2e-3 (about two and a half and
/// four ulp: one rounding each side, ties tipped either way).
inline Tolerance across_implementations(loom::DType dtype) {
  switch (dtype) {
    case loom::DType::bf16:
      return {1e-2, 1e-2};
    case loom::DType::f16:
      return {2e-3, 2e-3};
    default:
      return {2e-5, 2e-5};
  }
}

// ---- f32 results against float64 ----------------------------------------------------------------

/// One addition rounded once (bias_add): below an f32 ulp of values near 1.
inline constexpr Tolerance kOneAdditionAgainstFloat64{1e-7, 1e-7};
/// A sum of a few f32 terms (bias_grad over 15 rows, gathers accumulated onto a prior content).
inline constexpr Tolerance kShortSumAgainstFloat64{1e-6, 1e-6};
/// One libm call (tanh) and its derivative 1 − y².
inline constexpr Tolerance kOneLibmCallAgainstFloat64{1e-6, 1e-7};
/// A short chain of f32 operations per element with libm calls (GELU, softmax probabilities,
/// attention's context): a few ulp, with two orders of magnitude to spare.
inline constexpr Tolerance kF32AgainstFloat64{1e-5, 1e-6};
/// A row's statistics (LayerNorm: mean, variance, 1/√) folded into every output of the row.
inline constexpr Tolerance kRowStatisticsAgainstFloat64{1e-5, 1e-5};
/// The same LayerNorm of the same values on bf16 and f32 storage.
inline constexpr Tolerance kRowStatisticsSameValuesOtherStorage{1e-6, 1e-6};
/// LayerNorm of bf16 x with a bf16 y against f32 throughout: x rounded (2^-9 relative, amplified
/// by rstd·γ ≈ 1) plus y rounded (2^-9).
inline constexpr Tolerance kBf16InputAndOutput{0.02, 0.02};
/// A sum computed in float64 and rounded to f32 (sum_squares, global_norm): an f32 ulp or so.
inline constexpr Tolerance kFloat64SumRoundedToF32{1e-6, 1e-12};
/// Fused attention against the unfused ops on backend/cpu (the same function, the same dropout
/// bits, another order of sums): ctx and dv, and dq, dk through the softmax gradient.
inline constexpr Tolerance kFusedAgainstUnfusedOutput{1e-5, 1e-6};
inline constexpr Tolerance kFusedAgainstUnfusedGradient{1e-4, 1e-6};
/// Attention on bf16 storage against f32 of the same values: ctx rounded to bf16 once, and dq, dk
/// through δ = Σ d_ctx·ctx from that rounded ctx.
inline constexpr Tolerance kBf16ContextAgainstF32{1e-2, 1e-2};
inline constexpr Tolerance kThroughBf16Context{2e-2, 2e-2};
/// A mean of row losses log Σexp − logit (cross-entropy), ~1 in magnitude.
inline constexpr Tolerance kLossAgainstFloat64{0, 1e-5};
/// A dot product of up to ~50 f32 products (GEMM), against float64 or in another order.
inline constexpr Tolerance kDotProduct{1e-5, 1e-5};
/// A GEMM of bf16-rounded operands (2^-9 relative each, inputs in [−1, 1)) against the f32 GEMM:
/// about 2·2^-9·Σ|a||b| ≤ 0.18 for K = 45 in the worst case, ~0.02 observed.
inline constexpr Tolerance kBf16OperandsAgainstF32{0, 0.05};
/// The same products batched one way and another (a broadcast batch against a loop of GEMMs).
inline constexpr Tolerance kSameProductOtherBatching{1e-6, 1e-6};
/// The same op on 16-bit storage and on f32 holding the same values (exactly representable), so
/// only the f32 arithmetic's order may differ.
inline constexpr Tolerance kSameValuesOtherStorage{1e-6, 1e-8};
/// Probabilities (softmax) against float64: a sum of exponentials and a division per row.
inline constexpr Tolerance kProbabilitiesAgainstFloat64{1e-5, 1e-7};
/// The gated GELU of f16 inputs against the same values in f32 (y and dx, f32): the two loops may
/// take erf and tanh from libmvec's lanes on one side and scalar libm on the other (vector_math.hpp),
/// an f32 ulp apart (~6e-8), magnified where 1 + erf cancels and by |a|, |g| ≤ 4: up to 6e-7
/// measured on elements of ~1e-3.
inline constexpr Tolerance kGeluLibmLanesAgainstScalar{1e-6, 1e-6};
/// A rotary rotation x_lo·cos − x_hi·sin in f32 against float64 arithmetic on the same f32 factors
/// (inputs in [−2, 2)): each product rounded (≤ 2^-24·(|x_lo| + |x_hi|) ≤ 2.4e-7) and the sum
/// rounded (2^-24 relative), with a factor of two to spare. Angles or frequencies computed in f32
/// instead of double are off by ~3e-5 rad at position 511, ~6e-5 on y, far outside it.
inline constexpr Tolerance kRotationByF32Factors{1.2e-7, 5e-7};
/// A rotary rotation undone by its inverse in f32 (inputs in [−2, 2)): two rotations' roundings
/// (≤ 5e-7 each) and the f32 factors' cos² + sin² = 1 ± 2^-23.
inline constexpr Tolerance kRotationRoundTrip{0, 2e-6};

// ---- gradients against central differences of the float64 reference --------------------------

/// tanh's gradient: the difference quotient (h = 1e-6) is good to ~1e-10, the f32 result to an ulp.
inline constexpr Tolerance kOneLibmCallGradient{1e-5, 1e-6};
/// Gradients through a short chain of f32 operations (GELU, attention, cross-entropy, GEMM).
inline constexpr Tolerance kGradientAgainstCentralDifferences{1e-4, 1e-5};
/// LayerNorm's gradients by central differences with h = 1e-5 (the row's statistics move with
/// every input): dx, and the column sums dγ, dβ.
inline constexpr Tolerance kNormalisedInputGradient{1e-3, 1e-4};
inline constexpr Tolerance kNormalisedParameterGradient{1e-4, 1e-4};
/// Gradients of normalised exponentials (softmax, cross-entropy), many of them near 0.
inline constexpr Tolerance kProbabilityGradientAgainstCentralDifferences{1e-4, 1e-6};
/// A softmax gradient from probabilities rounded to bf16 against the one from f32 probabilities:
/// each probability moved by up to 2^-8 relative, summed over the row in Σ dp·p.
inline constexpr Tolerance kThroughBf16Probabilities{0.02, 1e-4};

// ---- one backend against the reference backend ---------------------------------------------------

/// One fused multiply-add or not (axpby), or one libm call (tanh), per element.
inline constexpr Tolerance kOneFmaAcrossImplementations{1e-6, 1e-6};
inline constexpr Tolerance kOneLibmCallAcrossImplementations{1e-6, 1e-6};
/// A short chain of f32 operations per element (GELU and tanh gradients, GELU in place).
inline constexpr Tolerance kElementwiseAcrossImplementations{1e-5, 1e-6};
inline constexpr Tolerance kElementwiseGradientAcrossImplementations{1e-5, 1e-5};
/// GELU stored as `dtype`: across_implementations() and 1e-5 absolute for the erf and tanh of each
/// implementation's math library around GELU's zero.
inline Tolerance activation_across_implementations(loom::DType dtype) {
  return across_implementations(dtype) + Tolerance{0, 1e-5};
}
/// Probabilities stored as `dtype` (rows of 37 keys): across_implementations() relative, and an
/// absolute part a tenth of it above 1e-6, since most probabilities are far below 1.
inline Tolerance probabilities_across_implementations(loom::DType dtype) {
  const Tolerance t = across_implementations(dtype);
  return {t.rtol, 1e-6 + t.atol / 10};
}
/// Probabilities over rows of 771 keys in f32.
inline constexpr Tolerance kProbabilitiesAcrossImplementations{1e-5, 1e-7};
/// The softmax gradient scale·p·(dp − Σ dp·p), a row's dot product in another order.
inline constexpr Tolerance kSoftmaxGradientAcrossImplementations{1e-4, 1e-5};
/// The same from identical bf16 probabilities over rows of 128: backend/cpu's is within 1e-8 of
/// float64 and the values are mostly 1e-4 to 1e-2.
inline constexpr Tolerance kLongRowDotProductAcrossImplementations{1e-5, 1e-7};
/// LayerNorm over rows of up to 771: y stored as `dtype` (1e-4 absolute for the row statistics'
/// order of sums), the statistics, dx, and dγ/dβ over 131 rows.
inline Tolerance normalised_across_implementations(loom::DType dtype) {
  return across_implementations(dtype) + Tolerance{0, 1e-4};
}
inline constexpr Tolerance kRowMeanAcrossImplementations{1e-5, 1e-5};
inline constexpr Tolerance kRowRstdAcrossImplementations{1e-4, 1e-5};
inline constexpr Tolerance kRowGradientAcrossImplementations{1e-4, 1e-4};
inline constexpr Tolerance kParameterGradientAcrossImplementations{1e-4, 1e-3};
/// LayerNorm over rows of 1,024 (derived in layernorm_test.cpp): y and dx, the mean (near 0),
/// rstd (~0.7).
inline constexpr Tolerance kLongRowAcrossImplementations{1e-5, 1e-5};
inline constexpr Tolerance kLongRowMeanAcrossImplementations{1e-5, 1e-6};
inline constexpr Tolerance kLongRowRstdAcrossImplementations{1e-5, 0};
/// Fused attention stored as `dtype` against another implementation (the unfused ops or another
/// fused kernel): ctx, and the gradients, which with 16-bit storage carry ctx's rounding through δ.
inline Tolerance attention_output_across_implementations(loom::DType dtype) {
  const double t = dtype == loom::DType::f32 ? 2e-5 : dtype == loom::DType::f16 ? 3e-3 : 2e-2;
  return {t, t};
}
inline Tolerance attention_gradient_across_implementations(loom::DType dtype) {
  const double t = dtype == loom::DType::f32 ? 1e-4 : dtype == loom::DType::f16 ? 5e-3 : 3e-2;
  return {t, t};
}
/// Attention's lse = log Σ exp over rows of up to 512 keys, against float64.
inline constexpr Tolerance kLogSumExpAcrossImplementations{1e-5, 1e-4};
/// The fused residual + LayerNorm against the separate ops on another implementation: only the
/// order of the row sums (a block tree against backend/cpu's loop) and rsqrt (≤ 2 ulp) differ,
/// ~1e-6 relative on the mean and variance for inputs with |sum| < 4, so ≤ ~5e-6 on out (|x̂·γ| < 6)
/// and d_sum; the mean is near 0.
inline constexpr Tolerance kRowSumOrderOutput{1e-5, 3e-5};
inline constexpr Tolerance kRowSumOrderMean{1e-5, 1e-6};
inline constexpr Tolerance kRowSumOrderRstd{1e-5, 0};
/// Cross-entropy over rows of 771 classes: the mean (a float64 sum of row losses), each row's loss
/// and the gradient softmax − onehot, whose elements are mostly far below 1.
inline constexpr Tolerance kMeanLossAcrossImplementations{1e-5, 1e-6};
inline constexpr Tolerance kRowLossAcrossImplementations{1e-5, 1e-5};
inline constexpr Tolerance kLogitGradientAcrossImplementations{1e-4, 1e-7};
/// The same over BERT's 30,522 classes (derived in cross_entropy_test.cpp): losses of 8 to 16
/// summed over ~3,800 in each row's Σexp, gradients held relatively down to ~4e-8.
inline constexpr Tolerance kVocabularyMeanLoss{0, 5e-6};
inline constexpr Tolerance kVocabularyRowLoss{0, 1e-5};
inline constexpr Tolerance kVocabularyLogitGradient{2e-5, 0};
/// Column sums over up to a few thousand rows (dbias) in another order.
inline constexpr Tolerance kColumnSumsAcrossImplementations{1e-5, 1e-4};
/// Column sums over 300,007 rows (tiles grown past 1,024 of 256): sums of ~600 in magnitude.
inline constexpr Tolerance kTallColumnSums{1e-4, 1e-2};

/// A GEMM of K products against another implementation's, operands and output as given: rtol t and
/// atol t·√K (the rounding of a sum grows as its square root), t = 1e-4 for f32, 1e-3 for 16-bit
/// operands into f32, and a 16-bit output's across_implementations().
inline Tolerance gemm_across_implementations(loom::DType operands, loom::DType output, int64_t k) {
  const double t = operands == loom::DType::f32 ? 1e-4
                   : output == loom::DType::f32 ? 1e-3
                                                : across_implementations(output).rtol;
  return {t, t * std::sqrt(static_cast<double>(k))};
}
/// A linear layer's weight gradient dW += dyᵀ·x over 131 rows, against another implementation.
inline constexpr Tolerance kWeightGradientAcrossImplementations{1e-5, 1e-4};
/// dW += dyᵀ·x over K products of operands uniform in [−1, 1], against another implementation.
/// Absolute: the rounding follows the partial sums, not the result. A product has σ_t = 1/3 and an
/// output σ_out = σ_t·√K (≈ 60 at K = 32,768). An f32 sum rounded term by term (u = 2^-24) is a
/// random walk of roundings proportional to the growing partial sums: error ≈ 0.3·u·σ_out·√K
/// (≈ 2e-4), the worst of 2.4 M outputs ~5 times that (backend/cpu's oneDNN, summing in blocks, is
/// within 1.2e-4 of float64 on 3,000 sampled outputs).
/// - f32 (no TF32): 8·u·σ_out·√K ≈ 5.2e-3. TF32 (10-bit mantissas) would be off by ~0.024 rms.
/// - bf16 operands, f32 c: the products are exact in f32, but Tensor Cores add each block of
///   products to the accumulator rounding toward zero, a bias that does not cancel: ≈ 0.75·u of the
///   partial sum per block of 8 products, σ ≈ 0.75·u·σ_t·K^1.5 / (8·√3) ≈ 6e-3 over the whole sum,
///   the worst output ~0.035: 0.1 (σ_out / 600). A result rounded to bf16 (errors up to 0.12 at
///   σ_out) or 16 of the K products left out (σ ≈ 1.3) fails it.
inline Tolerance gemm_sum_over_k(loom::DType operands, int64_t k) {
  const double u = std::ldexp(1.0, -24), kd = static_cast<double>(k), sigma_out = std::sqrt(kd / 9.0);
  return {0, operands == loom::DType::f32 ? 8 * u * sigma_out * std::sqrt(kd) : 0.1};
}
/// The optimizer passes against the reference's: the same element arithmetic, the float64
/// reductions (norms, clip divisors) in another order; weights and Adam's moments (the second
/// moment ~1e-6 and below) after four steps.
inline constexpr Tolerance kFloat64Norms{1e-12, 0};
inline constexpr Tolerance kUpdatedWeights{1e-5, 1e-7};
inline constexpr Tolerance kFirstMoments{1e-5, 1e-9};
inline constexpr Tolerance kSecondMoments{1e-5, 1e-12};
/// Column sums over `rows` rows (dbias, dγ, dβ) in another order than backend/cpu's row order
/// (tiles): their rounding grows with the rows; 1e-5 + 2e-7·rows is about four times the expected
/// worst column of sums that reach ~10² (3.3e-3 at 16,384 rows).
inline Tolerance column_sums(int64_t rows) {
  return {1e-5, 1e-5 + 2e-7 * static_cast<double>(rows)};
}

}  // namespace loom_backend_ops
