// GEMM: every transpose with alpha and beta against float64 (beta = 0 never reading c), strided
// batches over per-head views of a fused QKV buffer into strided outputs, a batch stride of 0
// broadcasting an operand, the linear layer's gradients by central differences (dW accumulated),
// 16-bit operands against f32, mismatched shapes and dtypes refused, an empty inner dimension; and
// against the reference backend for every operand/output dtype pair, merged, looped and broadcast
// batches, and a weight gradient summed over K = 32,768 products (a batch of 256 × 128 tokens).
#include <utility>

#include "backend_op_case.hpp"

namespace loom_backend_ops {
namespace {

using loom::DType;
using loom::Tensor;

LOOM_BACKEND_OP_FAMILY(Gemm);

/// c = alpha·op(a)·op(b) + beta·c in float64 on stored row-major matrices with leading dims.
std::vector<double> reference_gemm(const std::vector<float>& a, int64_t lda, bool ta,
                                   const std::vector<float>& b, int64_t ldb, bool tb,
                                   const std::vector<float>& c0, int64_t m, int64_t n, int64_t k,
                                   double alpha, double beta) {
  std::vector<double> c(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) {
        const double av = ta ? a[p * lda + i] : a[i * lda + p];
        const double bv = tb ? b[j * ldb + p] : b[p * ldb + j];
        s += av * bv;
      }
      c[i * n + j] = alpha * s + (beta != 0 ? beta * c0[i * n + j] : 0.0);
    }
  return c;
}

TEST_P(Gemm, EveryTransposeAlphaAndBetaMatchFloat64) {
  struct Case {
    int64_t m, n, k;
    bool ta, tb;
    float alpha, beta;
  };
  for (const Case& g : {Case{7, 5, 3, false, false, 1, 0}, Case{13, 11, 17, true, false, 1, 0},
                        Case{9, 23, 6, false, true, 0.5f, 1}, Case{31, 1, 19, true, true, 2, -0.5f},
                        Case{1, 29, 33, false, true, 1, 1}, Case{64, 48, 40, false, false, 1, 0.25f}}) {
    SCOPED_TRACE(std::to_string(g.m) + "×" + std::to_string(g.n) + "×" + std::to_string(g.k) +
                 (g.ta ? " aᵀ" : "") + (g.tb ? " bᵀ" : "") + " alpha " + std::to_string(g.alpha) + " beta " +
                 std::to_string(g.beta));
    const auto a = random_floats(g.m * g.k, 1), b = random_floats(g.k * g.n, 2),
               c = random_floats(g.m * g.n, 3);
    DeviceTensor a_dev = upload(HostTensor::of(
                     a, DType::f32, g.ta ? std::vector<int64_t>{g.k, g.m} : std::vector<int64_t>{g.m, g.k})),
                 b_dev = upload(HostTensor::of(
                     b, DType::f32, g.tb ? std::vector<int64_t>{g.n, g.k} : std::vector<int64_t>{g.k, g.n})),
                 c_dev = upload(HostTensor::of(c, DType::f32, {g.m, g.n}));
    backend().gemm(a_dev.view(), g.ta, b_dev.view(), g.tb, c_dev.view(), g.alpha, g.beta);
    expect_close(read(c_dev),
                 reference_gemm(a, g.ta ? g.m : g.k, g.ta, b, g.tb ? g.k : g.n, g.tb, c, g.m, g.n, g.k,
                                g.alpha, g.beta),
                 for_this_backend(kDotProduct, DType::f32), "gemm f32");
  }
}

TEST_P(Gemm, BetaZeroNeverReadsC) {
  DeviceTensor a = upload(HostTensor::of(random_floats(6 * 4, 4), DType::f32, {6, 4})),
               b = upload(HostTensor::of(random_floats(4 * 5, 5), DType::f32, {4, 5})),
               c = upload(HostTensor::of(std::vector<float>(30, NAN), DType::f32, {6, 5}));
  backend().gemm(a.view(), false, b.view(), false, c.view(), 1, 0);
  for (float v : read(c)) EXPECT_TRUE(std::isfinite(v));
}

TEST_P(Gemm, StridedBatchOverPerHeadViewsOfAFusedQkvBuffer) {
  // qkv: [B, T, 3, H, D]; scores[b, h] = Q[b, :, h, :] · K[b, :, h, :]ᵀ without any copy.
  const int64_t B = 2, T = 7, H = 3, D = 5;
  const auto qkv = random_floats(B * T * 3 * H * D, 6);
  DeviceTensor qkv_dev = upload(HostTensor::of(qkv, DType::f32, {B, T, 3, H, D})),
               scores = upload_zeros(DType::f32, {B, H, T, T});
  const Tensor fused = qkv_dev.view();
  const Tensor q = fused.select(2, 0).permute({0, 2, 1, 3});  // [B, H, T, D], row stride 3·H·D
  const Tensor k = fused.select(2, 1).permute({0, 2, 1, 3});
  backend().gemm(q, false, k, true, scores.view(), 0.5f, 0);
  std::vector<double> expected(B * H * T * T);
  for (int64_t bb = 0; bb < B; ++bb)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < T; ++i)
        for (int64_t j = 0; j < T; ++j) {
          double s = 0;
          for (int64_t d = 0; d < D; ++d)
            s += double(qkv[(((bb * T + i) * 3 + 0) * H + h) * D + d]) *
                 qkv[(((bb * T + j) * 3 + 1) * H + h) * D + d];
          expected[((bb * H + h) * T + i) * T + j] = 0.5 * s;
        }
  expect_close(read(scores), expected, for_this_backend(kDotProduct, DType::f32), "per-head scores");
}

TEST_P(Gemm, AttentionContextAndGradientsIntoStridedOutputViews) {
  // ctx[b, t, h, :] = Σ_j P[b, h, t, j]·V[b, j, h, :], written straight into a [B, T, H, D] buffer;
  // dK[b, j, h, :] = Σ_t dS[b, h, t, j]·Q[b, t, h, :] written into a per-head view of dQKV.
  const int64_t B = 2, T = 6, H = 3, D = 4;
  const auto qkv = random_floats(B * T * 3 * H * D, 14), probs = random_floats(B * H * T * T, 15);
  DeviceTensor qkv_dev = upload(HostTensor::of(qkv, DType::f32, {B, T, 3, H, D})),
               probs_dev = upload(HostTensor::of(probs, DType::f32, {B, H, T, T})),
               ctx = upload_zeros(DType::f32, {B, T, H, D}), dqkv = upload_zeros(DType::f32, {B, T, 3, H, D});
  const Tensor fused = qkv_dev.view();
  const Tensor v = fused.select(2, 2).permute({0, 2, 1, 3}), q = fused.select(2, 0).permute({0, 2, 1, 3});
  backend().gemm(probs_dev.view(), false, v, false, ctx.view().permute({0, 2, 1, 3}), 1, 0);
  backend().gemm(probs_dev.view(), true, q, false, dqkv.view().select(2, 1).permute({0, 2, 1, 3}), 1, 0);
  std::vector<double> ctx_expected(B * T * H * D), dqkv_expected(qkv.size(), 0.0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t t = 0; t < T; ++t)
        for (int64_t d = 0; d < D; ++d) {
          double c = 0, g = 0;
          for (int64_t j = 0; j < T; ++j) {
            c += double(probs[((b * H + h) * T + t) * T + j]) * qkv[(((b * T + j) * 3 + 2) * H + h) * D + d];
            g += double(probs[((b * H + h) * T + j) * T + t]) * qkv[(((b * T + j) * 3 + 0) * H + h) * D + d];
          }
          ctx_expected[((b * T + t) * H + h) * D + d] = c;
          dqkv_expected[(((b * T + t) * 3 + 1) * H + h) * D + d] = g;
        }
  const Tolerance f32 = for_this_backend(kDotProduct, DType::f32);
  expect_close(read(ctx), ctx_expected, f32, "ctx in [B, T, H, D]");
  expect_close(read(dqkv), dqkv_expected, f32, "dK in the K slot of dQKV, Q and V slots untouched");
  // bf16 operands, the same views.
  DeviceTensor qkv16 = upload(HostTensor::of(qkv, DType::bf16, {B, T, 3, H, D})),
               probs16 = upload(HostTensor::of(probs, DType::bf16, {B, H, T, T})),
               ctx16 = upload_zeros(DType::f32, {B, T, H, D});
  backend().gemm(probs16.view(), false, qkv16.view().select(2, 2).permute({0, 2, 1, 3}), false,
                 ctx16.view().permute({0, 2, 1, 3}), 1, 0);
  expect_close(read(ctx16), ctx_expected, for_this_backend(kBf16OperandsAgainstF32, DType::f32), "bf16 ctx");
}

TEST_P(Gemm, BatchStrideZeroBroadcastsAnOperand) {
  const int64_t batch = 3, m = 4, k = 6, n = 5;
  const auto a = random_floats(batch * m * k, 7), w = random_floats(k * n, 8);
  DeviceTensor a_dev = upload(HostTensor::of(a, DType::f32, {batch, m, k})),
               w_dev = upload(HostTensor::of(w, DType::f32, {k, n})),
               c = upload_zeros(DType::f32, {batch, m, n}), row = upload_zeros(DType::f32, {m, n});
  Tensor w3 = Tensor::contiguous(w_dev.view().data, DType::f32, {batch, k, n}, backend().device());
  w3.strides[0] = 0;
  backend().gemm(a_dev.view(), false, w3, false, c.view(), 1, 0);
  const std::vector<float> batched = read(c);
  for (int64_t i = 0; i < batch; ++i) {
    backend().gemm(a_dev.view().select(0, i), false, w_dev.view(), false, row.view(), 1, 0);
    expect_close(std::vector<float>(batched.begin() + i * m * n, batched.begin() + (i + 1) * m * n),
                 read(row), kSameProductOtherBatching, "broadcast batch " + std::to_string(i));
  }
}

TEST_P(Gemm, Bf16OperandsAgainstF32) {
  // Inputs rounded to bf16 (relative error ≤ 2^-9 each); with f32 accumulation the product of the
  // rounded inputs is exact up to f32 rounding, and a bf16 output is that result rounded.
  const int64_t m = 37, n = 29, k = 45;
  const auto a = random_floats(m * k, 9), b = random_floats(n * k, 10);
  const HostTensor a16 = HostTensor::of(a, DType::bf16, {m, k}), b16 = HostTensor::of(b, DType::bf16, {n, k});
  DeviceTensor a_dev = upload(HostTensor::of(a, DType::f32, {m, k})),
               b_dev = upload(HostTensor::of(b, DType::f32, {n, k})), a16_dev = upload(a16),
               b16_dev = upload(b16), ar = upload(HostTensor::of(a16.floats(), DType::f32, {m, k})),
               br = upload(HostTensor::of(b16.floats(), DType::f32, {n, k})),
               c32 = upload_zeros(DType::f32, {m, n}), c_from16 = upload_zeros(DType::f32, {m, n}),
               c16 = upload_zeros(DType::bf16, {m, n}), c_rounded = upload_zeros(DType::f32, {m, n});
  backend().gemm(a_dev.view(), false, b_dev.view(), true, c32.view(), 1, 0);
  backend().gemm(a16_dev.view(), false, b16_dev.view(), true, c_from16.view(), 1, 0);
  backend().gemm(a16_dev.view(), false, b16_dev.view(), true, c16.view(), 1, 0);
  backend().gemm(ar.view(), false, br.view(), true, c_rounded.view(), 1, 0);
  expect_close(read(c_from16), read(c32), for_this_backend(kBf16OperandsAgainstF32, DType::f32),
               "bf16 operands, f32 output, against f32 operands");
  expect_close(read(c_from16), read(c_rounded), for_this_backend(kDotProduct, DType::f32),
               "bf16 GEMM against the f32 GEMM of the rounded inputs");
  expect_close(read(c16), read(c_rounded), for_this_backend(one_ulp(DType::bf16, 1e-6), DType::bf16),
               "a bf16 output is the f32 result rounded");
}

TEST_P(Gemm, LinearLayerGradientsMatchCentralDifferences) {
  // y = x·Wᵀ; L = Σ g⊙y. dx = g·W (gemm), dW += gᵀ·x (gemm with beta = 1 ACCUMULATES).
  const int64_t n = 5, in = 7, out = 3;
  const auto x = random_floats(n * in, 11), w = random_floats(out * in, 12), g = random_floats(n * out, 13);
  const auto loss = [&](const std::vector<double>& xv, const std::vector<double>& wv) {
    double s = 0;
    for (int64_t r = 0; r < n; ++r)
      for (int64_t o = 0; o < out; ++o) {
        double y = 0;
        for (int64_t i = 0; i < in; ++i) y += xv[r * in + i] * wv[o * in + i];
        s += g[r * out + o] * y;
      }
    return s;
  };
  const auto xd = to_double(x), wd = to_double(w);
  DeviceTensor x_dev = upload(HostTensor::of(x, DType::f32, {n, in})),
               w_dev = upload(HostTensor::of(w, DType::f32, {out, in})),
               g_dev = upload(HostTensor::of(g, DType::f32, {n, out})),
               dx = upload_zeros(DType::f32, {n, in}),
               dw = upload(HostTensor::of(std::vector<float>(out * in, 0.25f), DType::f32, {out, in}));
  backend().gemm(g_dev.view(), false, w_dev.view(), false, dx.view(), 1, 0);
  backend().gemm(g_dev.view(), true, x_dev.view(), false, dw.view(), 1, 1);
  const Tolerance gradient = for_this_backend(kGradientAgainstCentralDifferences, DType::f32);
  expect_close(read(dx), numeric_gradient([&](const auto& v) { return loss(v, wd); }, xd), gradient, "dx");
  expect_close(read(dw), plus(numeric_gradient([&](const auto& v) { return loss(xd, v); }, wd), 0.25),
               gradient, "dW accumulated onto 0.25");
}

TEST_P(Gemm, MismatchedShapesAndOperandDtypesAreErrors) {
  DeviceTensor a = upload_zeros(DType::f32, {3, 4}), b = upload_zeros(DType::f32, {3, 4}),
               c = upload_zeros(DType::f32, {3, 3});
  expect_error_naming([&] { backend().gemm(a.view(), false, b.view(), false, c.view(), 1, 0); },
                      {"gemm: inner dimensions differ"});
  DeviceTensor a2 = upload_zeros(DType::f32, {4, 5}), b2 = upload_zeros(DType::f32, {6, 7}),
               c2 = upload_zeros(DType::f32, {4, 7});
  EXPECT_THROW(backend().gemm(a2.view(), false, b2.view(), false, c2.view(), 1.0f, 0.0f), loom::Error);
  // f16 × f32, and f16 operands into a bf16 output.
  DeviceTensor h = upload_zeros(DType::f16, {2, 2}), f = upload_zeros(DType::f32, {2, 2}),
               out = upload_zeros(DType::f32, {2, 2}), h2 = upload_zeros(DType::f16, {2, 2}),
               out_bf16 = upload_zeros(DType::bf16, {2, 2});
  expect_error_naming([&] { backend().gemm(h.view(), false, f.view(), false, out.view(), 1, 0); },
                      {"same dtype"});
  EXPECT_THROW(backend().gemm(h.view(), false, h2.view(), false, out_bf16.view(), 1, 0), loom::Error);
}

TEST_P(Gemm, AnEmptyInnerDimensionScalesC) {
  // a [4, 0] and b [0, 5] over a backend allocation (never read), with a valid row stride.
  DeviceTensor storage = upload_zeros(DType::f32, {1});
  Tensor a = Tensor::contiguous(storage.view().data, DType::f32, {4, 0}, backend().device());
  Tensor b = Tensor::contiguous(storage.view().data, DType::f32, {0, 5}, backend().device());
  a.strides[0] = 1;
  const std::vector<float> values = random_floats(20, 14);
  DeviceTensor c = upload(HostTensor::of(values, DType::f32, {4, 5}));
  backend().gemm(a, false, b, false, c.view(), 1.0f, 0.5f);
  std::vector<float> expected = values;
  for (float& v : expected) v *= 0.5f;
  expect_close(read(c), expected, kExact, "K = 0, beta = 0.5");
  backend().gemm(a, false, b, false, c.view(), 1.0f, 0.0f);
  expect_close(read(c), std::vector<float>(20, 0.0f), kExact, "K = 0, beta = 0");
}

/// Runs c = alpha·op(a)·op(b) + beta·c on the backend under test and the reference from the same
/// data (each operand seen through its view function) and compares.
struct GemmComparison {
  loom::Backend& backend;
  loom::Backend& reference;

  template <typename AView, typename BView, typename CView>
  void operator()(HostTensor a, bool ta, HostTensor b, bool tb, HostTensor c, float alpha, float beta,
                  AView a_view, BView b_view, CView c_view, Tolerance tolerance,
                  const std::string& what) const {
    DeviceTensor a_dev(backend, a), b_dev(backend, b), c_dev(backend, c);
    reference.gemm(a_view(a.view()), ta, b_view(b.view()), tb, c_view(c.view()), alpha, beta);
    backend.gemm(a_view(a_dev.view()), ta, b_view(b_dev.view()), tb, c_view(c_dev.view()), alpha, beta);
    expect_close(c_dev.floats(), c.floats(), tolerance, what);
  }
};

const auto whole = [](const Tensor& t) { return t; };

TEST_P(Gemm, EveryTransposeAndDtypeAsTheReference) {
  const GemmComparison compare{backend(), reference()};
  const int64_t M = 37, K = 771, N = 131;
  for (const auto& [in, out] : {std::pair{DType::f32, DType::f32}, std::pair{DType::bf16, DType::f32},
                                std::pair{DType::bf16, DType::bf16}, std::pair{DType::f16, DType::f32},
                                std::pair{DType::f16, DType::f16}}) {
    const Tolerance tolerance = gemm_across_implementations(in, out, K);
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (float beta : {0.0f, 0.75f}) {
          HostTensor a = HostTensor::of(random_floats(M * K, 1), in,
                                        ta ? std::vector<int64_t>{K, M} : std::vector<int64_t>{M, K});
          HostTensor b = HostTensor::of(random_floats(K * N, 2), in,
                                        tb ? std::vector<int64_t>{N, K} : std::vector<int64_t>{K, N});
          HostTensor c = HostTensor::of(random_floats(M * N, 3), out, {M, N});
          compare(a, ta, b, tb, c, 0.5f, beta, whole, whole, whole, tolerance,
                  std::string(loom::dtype_name(in)) + "→" + loom::dtype_name(out) + (ta ? " aᵀ" : "") +
                      (tb ? " bᵀ" : "") + " beta " + std::to_string(beta));
        }
  }
}

TEST_P(Gemm, PerHeadViewsAndBatchesAsTheReference) {
  const GemmComparison compare{backend(), reference()};
  // qkv: [B, T, 3, H, d]; per-head q and k views [B, H, T, d] with row stride 3·H·d; scores = q·kᵀ.
  {
    const int64_t B = 2, T = 37, H = 3, d = 16;
    HostTensor qkv = HostTensor::of(random_floats(B * T * 3 * H * d, 4), DType::f32, {B, T, 3, H, d});
    const auto head = [](int which) {
      return [=](const Tensor& t) { return t.select(2, which).permute({0, 2, 1, 3}); };
    };
    compare(qkv, false, qkv, true, HostTensor::zeros(DType::f32, {B, H, T, T}), 0.25f, 0.0f, head(0), head(1),
            whole, kDotProduct, "q·kᵀ per head");
  }
  const int64_t B = 3, H = 2, M = 5, K = 37, N = 7;
  // b broadcast over both batch dims (strides 0).
  HostTensor a = HostTensor::of(random_floats(B * H * M * K, 5), DType::f32, {B, H, M, K});
  HostTensor w = HostTensor::of(random_floats(K * N, 6), DType::f32, {1, 1, K, N});
  HostTensor c = HostTensor::of(random_floats(B * H * M * N, 7), DType::f32, {B, H, M, N});
  const auto broadcast = [&](const Tensor& t) {
    Tensor v = t;
    v.shape[0] = B;
    v.shape[1] = H;
    v.strides[0] = 0;
    v.strides[1] = 0;
    return v;
  };
  compare(a, false, w, false, c, 1.0f, 1.0f, whole, broadcast, whole, kDotProduct, "broadcast b");
  // Batch dims that do not merge: a's stored [H, B] seen as [B, H].
  HostTensor at = HostTensor::of(random_floats(B * H * M * K, 8), DType::f32, {H, B, M, K});
  HostTensor b = HostTensor::of(random_floats(B * H * K * N, 9), DType::f32, {B, H, K, N});
  const auto swap01 = [](const Tensor& t) { return t.permute({1, 0, 2, 3}); };
  compare(at, false, b, false, c, 1.0f, 0.0f, swap01, whole, whole, kDotProduct, "looped outer batch");
}

TEST_P(Gemm, LinearLayerAndWeightGradientAsTheReference) {
  const GemmComparison compare{backend(), reference()};
  const int64_t rows = 131, in = 64, out = 37;
  HostTensor x = HostTensor::of(random_floats(rows * in, 10), DType::f32, {rows, in});
  HostTensor w = HostTensor::of(random_floats(out * in, 11), DType::f32, {out, in});
  compare(x, false, w, true, HostTensor::zeros(DType::f32, {rows, out}), 1.0f, 0.0f, whole, whole, whole,
          kDotProduct, "y = x·Wᵀ");
  HostTensor dy = HostTensor::of(random_floats(rows * out, 12), DType::f32, {rows, out});
  HostTensor dw = HostTensor::of(random_floats(out * in, 13), DType::f32, {out, in});
  compare(dy, true, x, false, dw, 1.0f, 1.0f, whole, whole, whole, kWeightGradientAcrossImplementations,
          "dW += dyᵀ·x");
}

TEST_P(Gemm, WeightGradientOverK32768AsTheReference) {
  // The weight gradient of BERT-base's FFN output layer (3,072 → 768) over 256 × 128 tokens:
  // dW[768, 3072] += dyᵀ·x, dy [32768, 768], x [32768, 3072]: 32,768 products per output
  // (tolerances: gemm_sum_over_k, tolerances.hpp).
  LOOM_SKIP_WHERE_REFERENCE_CODE_RUNS();
  const GemmComparison compare{backend(), reference()};
  const int64_t K = 32768, M = 768, N = 3072;
  const std::vector<float> dy_values = random_floats(K * M, 21), x_values = random_floats(K * N, 22),
                           dw_values = random_floats(M * N, 23);
  for (const DType in : {DType::f32, DType::bf16}) {
    HostTensor dy = HostTensor::of(dy_values, in, {K, M});
    HostTensor x = HostTensor::of(x_values, in, {K, N});
    HostTensor dw = HostTensor::of(dw_values, DType::f32, {M, N});
    compare(std::move(dy), true, std::move(x), false, std::move(dw), 1.0f, 1.0f, whole, whole, whole,
            gemm_sum_over_k(in, K),
            std::string("dW += dyᵀ·x, K = 32768, ") + loom::dtype_name(in) + " operands");
  }
}

}  // namespace
}  // namespace loom_backend_ops
