// Fused attention (loom::FusedAttention) against the unfused composition of gemm, softmax and dropout that
// the encoder layer uses otherwise, on per-head strided views with padding masks and dropout; against finite
// differences of a double reference; bf16 against f32; thread independence; bad arguments.
#include <sstream>

#include "loom/sdk/philox.hpp"
#include "op_test_support.hpp"

namespace {

using namespace loom_cpu_test;
using loom::DType;
using loom::Tensor;

struct Shape {
  int64_t B, H, T, d;
  int64_t rows() const { return B * T; }
  int64_t width() const { return H * d; }
  int64_t numel() const { return B * T * H * d; }
};

/// The [B, H, T, d] per-head view of a [B·T, H·d] activation (how the encoder layer calls the op).
Tensor heads(void* data, DType dtype, const Shape& n) {
  return Tensor::contiguous(data, dtype, {n.B, n.T, n.H, n.d}).permute({0, 2, 1, 3});
}

/// A padding mask: batch row b keeps its first T − 2b keys (at least one).
std::vector<float> padding_mask(const Shape& n) {
  std::vector<int32_t> attend(static_cast<size_t>(n.B * n.T));
  for (int64_t b = 0; b < n.B; ++b)
    for (int64_t t = 0; t < n.T; ++t) attend[b * n.T + t] = t < std::max<int64_t>(1, n.T - 2 * b) ? 1 : 0;
  std::vector<float> mask(attend.size());
  backend().additive_key_mask(view(attend, {n.B, n.T}), view(mask, {n.B, n.T}));
  return mask;
}

struct Grads {
  std::vector<float> ctx, dq, dk, dv;
};

/// ctx and the gradients through the unfused ops (encoder_layer.cpp's unfused path, in f32).
Grads unfused(const Shape& n, std::vector<float>& q, std::vector<float>& k, std::vector<float>& v,
              std::vector<float>& mask, std::vector<float>& d_ctx, float scale, float p, uint64_t seed) {
  auto& be = backend();
  const int64_t tt = n.B * n.H * n.T * n.T;
  std::vector<float> scores(tt), probs(tt), dropped(tt), d_scores(tt);
  Grads g{std::vector<float>(n.numel()), std::vector<float>(n.numel()), std::vector<float>(n.numel()),
          std::vector<float>(n.numel())};
  const std::initializer_list<int64_t> square = {n.B, n.H, n.T, n.T};
  be.gemm(heads(q.data(), DType::f32, n), false, heads(k.data(), DType::f32, n), true, view(scores, square),
          1, 0);
  be.softmax_forward(view(scores, square), view(mask, {n.B, n.T}), scale, view(probs, square));
  if (p > 0)
    be.dropout_forward(view(probs, square), view(dropped, square), p, seed, 0);
  else
    dropped = probs;
  be.gemm(view(dropped, square), false, heads(v.data(), DType::f32, n), false,
          heads(g.ctx.data(), DType::f32, n), 1, 0);
  const Tensor dc = heads(d_ctx.data(), DType::f32, n);
  be.gemm(dc, false, heads(v.data(), DType::f32, n), true, view(d_scores, square), 1, 0);
  be.gemm(view(dropped, square), true, dc, false, heads(g.dv.data(), DType::f32, n), 1, 0);
  if (p > 0) be.dropout_backward(view(d_scores, square), view(d_scores, square), p, seed, 0);
  be.softmax_backward(view(d_scores, square), view(probs, square), scale, view(d_scores, square));
  be.gemm(view(d_scores, square), false, heads(k.data(), DType::f32, n), false,
          heads(g.dq.data(), DType::f32, n), 1, 0);
  be.gemm(view(d_scores, square), true, heads(q.data(), DType::f32, n), false,
          heads(g.dk.data(), DType::f32, n), 1, 0);
  return g;
}

/// ctx and the gradients through the fused ops, f32.
Grads fused(loom_cpu::CpuBackend& be, const Shape& n, std::vector<float>& q, std::vector<float>& k,
            std::vector<float>& v, std::vector<float>* mask, std::vector<float>& d_ctx, float scale, float p,
            uint64_t seed) {
  Grads g{std::vector<float>(n.numel()), std::vector<float>(n.numel()), std::vector<float>(n.numel()),
          std::vector<float>(n.numel())};
  std::vector<float> lse(n.B * n.H * n.T), delta(lse.size());
  const Tensor key_mask = mask != nullptr ? view(*mask, {n.B, n.T}) : Tensor{};
  be.attention_forward(heads(q.data(), DType::f32, n), heads(k.data(), DType::f32, n),
                       heads(v.data(), DType::f32, n), key_mask, scale, p, seed, 0,
                       heads(g.ctx.data(), DType::f32, n), view(lse, {n.B, n.H, n.T}));
  be.attention_backward(heads(d_ctx.data(), DType::f32, n), heads(q.data(), DType::f32, n),
                        heads(k.data(), DType::f32, n), heads(v.data(), DType::f32, n),
                        heads(g.ctx.data(), DType::f32, n), view(lse, {n.B, n.H, n.T}), key_mask, scale, p,
                        seed, 0, heads(g.dq.data(), DType::f32, n), heads(g.dk.data(), DType::f32, n),
                        heads(g.dv.data(), DType::f32, n), view(delta, {n.B, n.H, n.T}));
  return g;
}

struct Inputs {
  std::vector<float> q, k, v, d_ctx, mask;
};
Inputs random_inputs(const Shape& n, uint32_t seed) {
  return {random_floats(n.numel(), seed, -2, 2), random_floats(n.numel(), seed + 1, -2, 2),
          random_floats(n.numel(), seed + 2), random_floats(n.numel(), seed + 3), padding_mask(n)};
}

TEST(FusedAttention, MatchesUnfusedOpsWithPaddingAndDropout) {
  for (const Shape n : {Shape{2, 3, 7, 8}, Shape{3, 2, 37, 64}, Shape{1, 1, 1, 5}}) {
    for (const float p : {0.0f, 0.1f, 0.5f}) {
      Inputs in = random_inputs(n, 11);
      const float scale = 1.0f / std::sqrt(static_cast<float>(n.d));
      const Grads want = unfused(n, in.q, in.k, in.v, in.mask, in.d_ctx, scale, p, 1234);
      const Grads got = fused(backend(), n, in.q, in.k, in.v, &in.mask, in.d_ctx, scale, p, 1234);
      std::ostringstream label;  // (not string +: GCC 12's -Wrestrict false positive, bug 105329)
      label << "B" << n.B << " H" << n.H << " T" << n.T << " d" << n.d << " p" << p << ": ";
      const std::string what = label.str();
      expect_close(got.ctx, want.ctx, 1e-5, 1e-6, what + "ctx");
      expect_close(got.dq, want.dq, 1e-4, 1e-6, what + "dq");
      expect_close(got.dk, want.dk, 1e-4, 1e-6, what + "dk");
      expect_close(got.dv, want.dv, 1e-5, 1e-6, what + "dv");
    }
  }
}

/// ctx = dropout(softmax(scale·q·kᵀ + mask))·v in double, the dropout bits from philox_word.
std::vector<double> reference_ctx(const Shape& n, const std::vector<double>& q, const std::vector<double>& k,
                                  const std::vector<double>& v, const std::vector<float>& mask, double scale,
                                  float p, uint64_t seed) {
  std::vector<double> ctx(q.size(), 0.0);
  const uint32_t threshold = loom::dropout_threshold(p);
  auto at = [&](int64_t b, int64_t h, int64_t t) { return (b * n.T + t) * n.width() + h * n.d; };
  for (int64_t b = 0; b < n.B; ++b)
    for (int64_t h = 0; h < n.H; ++h)
      for (int64_t i = 0; i < n.T; ++i) {
        std::vector<double> s(n.T);
        double max = -INFINITY, sum = 0;
        for (int64_t j = 0; j < n.T; ++j) {
          double dot = 0;
          for (int64_t c = 0; c < n.d; ++c) dot += q[at(b, h, i) + c] * k[at(b, h, j) + c];
          s[j] = scale * dot + mask[b * n.T + j];
          max = std::max(max, s[j]);
        }
        for (int64_t j = 0; j < n.T; ++j) sum += std::exp(s[j] - max);
        for (int64_t j = 0; j < n.T; ++j) {
          const uint64_t e = static_cast<uint64_t>(((b * n.H + h) * n.T + i) * n.T + j);
          const double z = p == 0 ? 1.0 : (loom::philox_word(seed, e) >= threshold ? 1.0 / (1.0 - p) : 0.0);
          for (int64_t c = 0; c < n.d; ++c)
            ctx[at(b, h, i) + c] += std::exp(s[j] - max) / sum * z * v[at(b, h, j) + c];
        }
      }
  return ctx;
}

TEST(FusedAttention, GradientsMatchFiniteDifferencesOfDoubleReference) {
  const Shape n{2, 2, 5, 3};
  const float p = 0.3f, scale = 0.6f;
  Inputs in = random_inputs(n, 21);
  const Grads got = fused(backend(), n, in.q, in.k, in.v, &in.mask, in.d_ctx, scale, p, 77);
  const auto q = to_double(in.q), k = to_double(in.k), v = to_double(in.v);
  expect_close(got.ctx, reference_ctx(n, q, k, v, in.mask, scale, p, 77), 1e-5, 1e-6, "ctx");
  const auto dq = numeric_gradient(
      [&](const auto& x) { return weighted_sum(reference_ctx(n, x, k, v, in.mask, scale, p, 77), in.d_ctx); },
      q);
  const auto dk = numeric_gradient(
      [&](const auto& x) { return weighted_sum(reference_ctx(n, q, x, v, in.mask, scale, p, 77), in.d_ctx); },
      k);
  const auto dv = numeric_gradient(
      [&](const auto& x) { return weighted_sum(reference_ctx(n, q, k, x, in.mask, scale, p, 77), in.d_ctx); },
      v);
  expect_close(got.dq, dq, 1e-4, 1e-5, "dq");
  expect_close(got.dk, dk, 1e-4, 1e-5, "dk");
  expect_close(got.dv, dv, 1e-4, 1e-5, "dv");
}

TEST(FusedAttention, FullyMaskedBatchRowIsUniformLikeTheUnfusedPath) {
  const Shape n{2, 2, 6, 4};
  Inputs in = random_inputs(n, 31);
  for (int64_t t = 0; t < n.T; ++t) in.mask[n.T + t] = loom::kMaskedKey;  // batch row 1: every key masked
  const Grads want = unfused(n, in.q, in.k, in.v, in.mask, in.d_ctx, 0.5f, 0.0f, 0);
  const Grads got = fused(backend(), n, in.q, in.k, in.v, &in.mask, in.d_ctx, 0.5f, 0.0f, 0);
  expect_close(got.ctx, want.ctx, 1e-5, 1e-6, "ctx");
  expect_close(got.dq, want.dq, 1e-4, 1e-6, "dq");
  expect_close(got.dk, want.dk, 1e-4, 1e-6, "dk");
  expect_close(got.dv, want.dv, 1e-5, 1e-6, "dv");
}

TEST(FusedAttention, WithoutMaskAndBf16AgreesWithF32) {
  const Shape n{2, 2, 19, 16};
  Inputs in = random_inputs(n, 41);
  // bf16-exact inputs, so the two runs differ only by the rounding of ctx.
  for (auto* x : {&in.q, &in.k, &in.v}) *x = from_bf16(to_bf16(*x));
  const Grads f32 = fused(backend(), n, in.q, in.k, in.v, nullptr, in.d_ctx, 0.25f, 0.2f, 5);
  auto q = to_bf16(in.q), k = to_bf16(in.k), v = to_bf16(in.v);
  std::vector<loom::BFloat16> ctx(n.numel());
  std::vector<float> lse(n.B * n.H * n.T), delta(lse.size()), dq(n.numel()), dk(n.numel()), dv(n.numel());
  backend().attention_forward(heads(q.data(), DType::bf16, n), heads(k.data(), DType::bf16, n),
                              heads(v.data(), DType::bf16, n), Tensor{}, 0.25f, 0.2f, 5, 0,
                              heads(ctx.data(), DType::bf16, n), view(lse, {n.B, n.H, n.T}));
  expect_close(from_bf16(ctx), f32.ctx, 1e-2, 1e-2, "bf16 ctx");
  backend().attention_backward(heads(in.d_ctx.data(), DType::f32, n), heads(q.data(), DType::bf16, n),
                               heads(k.data(), DType::bf16, n), heads(v.data(), DType::bf16, n),
                               heads(ctx.data(), DType::bf16, n), view(lse, {n.B, n.H, n.T}), Tensor{}, 0.25f,
                               0.2f, 5, 0, heads(dq.data(), DType::f32, n), heads(dk.data(), DType::f32, n),
                               heads(dv.data(), DType::f32, n), view(delta, {n.B, n.H, n.T}));
  expect_close(dq, f32.dq, 2e-2, 2e-2, "bf16 dq");
  expect_close(dk, f32.dk, 2e-2, 2e-2, "bf16 dk");
  expect_close(dv, f32.dv, 1e-5, 1e-6, "bf16 dv");  // dv does not depend on ctx's rounding
}

TEST(FusedAttention, ResultsDoNotDependOnTheThreadCount) {
  const Shape n{3, 4, 33, 8};
  Inputs in = random_inputs(n, 51);
  loom_cpu::CpuBackend one(1), three(3);
  const Grads a = fused(one, n, in.q, in.k, in.v, &in.mask, in.d_ctx, 0.3f, 0.1f, 9);
  const Grads b = fused(three, n, in.q, in.k, in.v, &in.mask, in.d_ctx, 0.3f, 0.1f, 9);
  EXPECT_EQ(a.ctx, b.ctx);
  EXPECT_EQ(a.dq, b.dq);
  EXPECT_EQ(a.dk, b.dk);
  EXPECT_EQ(a.dv, b.dv);
}

TEST(FusedAttention, OptionDecidesWhetherBlocksUseIt) {
  EXPECT_FALSE(loom_cpu::CpuBackend(1).fused_attention(64, 512));
  EXPECT_TRUE(loom_cpu::CpuBackend(1, true).fused_attention(64, 512));
}

TEST(FusedAttention, BadArgumentsNameTheOpAndTheTensor) {
  const Shape n{1, 2, 4, 8};
  Inputs in = random_inputs(n, 61);
  std::vector<float> ctx(n.numel()), lse(n.B * n.H * (n.T + 1));
  try {
    backend().attention_forward(heads(in.q.data(), DType::f32, n), heads(in.k.data(), DType::f32, n),
                                heads(in.v.data(), DType::f32, n), Tensor{}, 1.0f, 0.0f, 0, 0,
                                heads(ctx.data(), DType::f32, n), view(lse, {n.B, n.H, n.T + 1}));
    FAIL() << "a wrong lse shape was accepted";
  } catch (const loom::Error& e) {
    EXPECT_NE(std::string(e.what()).find("attention_forward: lse"), std::string::npos) << e.what();
  }
}

}  // namespace
