// Sliding-window attention (loom::WindowedAttention, on backends that offer it): FusedAttention
// restricted to the band |i − j| ≤ window, on per-head strided views. Against a float64 reference
// of the header's definition (a pair outside the band scores kMaskedKey; a query whose band holds
// only padding is uniform over all T keys; dropout draws FusedAttention's Philox elements) at
// windows 0, 1, 3, T − 1 and beyond, with padding masks, dropout and an offset: the forward, its
// analytic gradients, and the gradients against central differences; a window covering every key
// (T − 1, T, more, negative) bit for bit FusedAttention; 16-bit storage within one rounding of f32
// on the same values; the views of a fused [B·T, 3·H·d] QKV buffer bit for bit contiguous ones;
// the reference backend's bits at a size its loops split across threads; a wrong lse named.
#include <algorithm>
#include <limits>
#include <sstream>
#include <tuple>

#include "attention_shapes.hpp"
#include "backend_op_case.hpp"
#include "loom/sdk/ops/fused_attention.hpp"
#include "loom/sdk/ops/windowed_attention.hpp"
#include "loom/sdk/philox.hpp"

namespace loom_backend_ops {
namespace {

using loom::DType;
using loom::Tensor;

LOOM_BACKEND_OP_FAMILY(WindowedAttention);

bool in_band(int64_t i, int64_t j, int64_t window) {
  return window < 0 || (i > j ? i - j : j - i) <= window;
}
bool key_allowed(const std::vector<float>& mask, int64_t b, int64_t j, int64_t T) {
  return mask.empty() || mask[b * T + j] > 0.5f * loom::kMaskedKey;
}
/// True when query i of batch row b has no allowed key in its band (a padding query among padding).
bool only_padding_in_band(const std::vector<float>& mask, int64_t b, int64_t i, int64_t window, int64_t T) {
  for (int64_t j = 0; j < T; ++j)
    if (in_band(i, j, window) && key_allowed(mask, b, j, T)) return false;
  return true;
}

/// Attention in float64 over [B, T, H, d] activations, as windowed_attention.hpp defines it; lse
/// [B, H, T]. With d_ctx, the analytic gradients too: the softmax gradient p·(dp·z − δ) of every
/// row, uniform ones included (whose p is 1/T for every key), as FusedAttention treats rows that
/// allow no key.
struct Float64Attention {
  std::vector<double> ctx, lse, dq, dk, dv;
};
Float64Attention reference_attention(const Shape& n, const std::vector<double>& q,
                                     const std::vector<double>& k, const std::vector<double>& v,
                                     const std::vector<float>& mask, const std::vector<float>* d_ctx,
                                     double scale, int64_t window, float p, uint64_t seed, uint64_t offset) {
  Float64Attention out;
  out.ctx.assign(q.size(), 0.0);
  out.lse.assign(static_cast<size_t>(n.B * n.H * n.T), 0.0);
  if (d_ctx != nullptr) out.dq = out.dk = out.dv = out.ctx;
  const uint32_t threshold = loom::dropout_threshold(p);
  const auto at = [&](int64_t b, int64_t h, int64_t t) { return (b * n.T + t) * n.H * n.d + h * n.d; };
  std::vector<double> s(n.T), prob(n.T), z(n.T);
  for (int64_t b = 0; b < n.B; ++b)
    for (int64_t h = 0; h < n.H; ++h)
      for (int64_t i = 0; i < n.T; ++i) {
        const int64_t row = (b * n.H + h) * n.T + i;
        double max = -INFINITY, sum = 0;
        for (int64_t j = 0; j < n.T; ++j) {
          double dot = 0;
          for (int64_t c = 0; c < n.d; ++c) dot += q[at(b, h, i) + c] * k[at(b, h, j) + c];
          s[j] = in_band(i, j, window) ? scale * dot + (mask.empty() ? 0.0 : mask[b * n.T + j])
                                       : static_cast<double>(loom::kMaskedKey);
          max = std::max(max, s[j]);
        }
        for (int64_t j = 0; j < n.T; ++j) sum += std::exp(s[j] - max);
        out.lse[row] = max + std::log(sum);
        const bool uniform = only_padding_in_band(mask, b, i, window, n.T);
        for (int64_t j = 0; j < n.T; ++j) {
          prob[j] = uniform ? 1.0 / static_cast<double>(n.T) : std::exp(s[j] - max) / sum;
          const auto e = offset + static_cast<uint64_t>(row * n.T + j);
          z[j] = p == 0 ? 1.0 : (loom::philox_word(seed, e) >= threshold ? 1.0 / (1.0 - p) : 0.0);
          for (int64_t c = 0; c < n.d; ++c) out.ctx[at(b, h, i) + c] += prob[j] * z[j] * v[at(b, h, j) + c];
        }
        if (d_ctx == nullptr) continue;
        const float* dc = d_ctx->data() + at(b, h, i);
        double delta = 0;
        for (int64_t c = 0; c < n.d; ++c) delta += dc[c] * out.ctx[at(b, h, i) + c];
        for (int64_t j = 0; j < n.T; ++j) {
          double dp = 0;
          for (int64_t c = 0; c < n.d; ++c) dp += dc[c] * v[at(b, h, j) + c];
          const double ds = prob[j] * (dp * z[j] - delta);
          for (int64_t c = 0; c < n.d; ++c) {
            out.dq[at(b, h, i) + c] += scale * ds * k[at(b, h, j) + c];
            out.dk[at(b, h, j) + c] += scale * ds * q[at(b, h, i) + c];
            out.dv[at(b, h, j) + c] += prob[j] * z[j] * dc[c];
          }
        }
      }
  return out;
}

/// One run of the op on `backend` (its memory) from host data: ctx in q's dtype, gradients f32.
struct BandRun {
  BandRun(loom::Backend& backend, const Shape& n, const HostTensor& q_host, const HostTensor& k_host,
          const HostTensor& v_host, const HostTensor* mask_host, const HostTensor& d_ctx_host)
      : q(backend, q_host),
        k(backend, k_host),
        v(backend, v_host),
        d_ctx(backend, d_ctx_host),
        mask(backend, mask_host != nullptr ? *mask_host : HostTensor::zeros(DType::f32, {1})),
        ctx(backend, HostTensor::zeros(q_host.dtype, n.activation())),
        lse(backend, HostTensor::zeros(DType::f32, {n.B, n.H, n.T})),
        dq(backend, HostTensor::zeros(DType::f32, n.activation())),
        dk(backend, HostTensor::zeros(DType::f32, n.activation())),
        dv(backend, HostTensor::zeros(DType::f32, n.activation())),
        delta(backend, HostTensor::zeros(DType::f32, {n.B, n.H, n.T})),
        masked(mask_host != nullptr) {}

  Tensor key_mask() const { return masked ? mask.view() : Tensor{}; }
  void windowed(loom::WindowedAttention& op, float scale, int64_t window, float p, uint64_t seed,
                uint64_t offset) {
    op.windowed_attention_forward(heads(q.view()), heads(k.view()), heads(v.view()), key_mask(), scale,
                                  window, p, seed, offset, heads(ctx.view()), lse.view());
    op.windowed_attention_backward(heads(d_ctx.view()), heads(q.view()), heads(k.view()), heads(v.view()),
                                   heads(ctx.view()), lse.view(), key_mask(), scale, window, p, seed, offset,
                                   heads(dq.view()), heads(dk.view()), heads(dv.view()), delta.view());
  }
  void fused(loom::FusedAttention& op, float scale, float p, uint64_t seed, uint64_t offset) {
    op.attention_forward(heads(q.view()), heads(k.view()), heads(v.view()), key_mask(), scale, p, seed,
                         offset, heads(ctx.view()), lse.view());
    op.attention_backward(heads(d_ctx.view()), heads(q.view()), heads(k.view()), heads(v.view()),
                          heads(ctx.view()), lse.view(), key_mask(), scale, p, seed, offset, heads(dq.view()),
                          heads(dk.view()), heads(dv.view()), delta.view());
  }
  /// Every output bit for bit those of `other`.
  void expect_same_bits_as(const BandRun& other, const std::string& what) const {
    for (const auto& [name, mine, theirs] :
         {std::tuple{"ctx", &ctx, &other.ctx}, std::tuple{"lse", &lse, &other.lse},
          std::tuple{"dq", &dq, &other.dq}, std::tuple{"dk", &dk, &other.dk},
          std::tuple{"dv", &dv, &other.dv}, std::tuple{"delta", &delta, &other.delta}})
      expect_same_bits(mine->download(), theirs->download(), what + ": " + name);
  }

  DeviceTensor q, k, v, d_ctx, mask, ctx, lse, dq, dk, dv, delta;
  bool masked;
};

struct Inputs {
  HostTensor q, k, v, d_ctx, mask;
};
Inputs random_inputs(const Shape& n, uint32_t seed, DType dtype = DType::f32) {
  return {HostTensor::of(random_floats(n.numel(), seed, -2, 2), dtype, n.activation()),
          HostTensor::of(random_floats(n.numel(), seed + 1, -2, 2), dtype, n.activation()),
          HostTensor::of(random_floats(n.numel(), seed + 2), dtype, n.activation()),
          HostTensor::of(random_floats(n.numel(), seed + 3), DType::f32, n.activation()), padding_mask(n)};
}

std::string window_name(int64_t window, float p) {
  std::ostringstream out;
  out << "window " << window << " p " << p;
  return out.str();
}

// Batch rows keep 9, 7 and 5 keys of 9: with windows 0 and 1 (and 3 in the last row) the last
// queries' bands hold only padding, so their rows are uniform over all nine keys.
TEST_P(WindowedAttention, MatchesTheFloat64ReferenceAtEveryWindow) {
  LOOM_OFFERED_OR_SKIP(loom::WindowedAttention, op);
  const Shape n{3, 2, 9, 4};
  const Inputs in = random_inputs(n, 101);
  const auto q = to_double(in.q.floats()), k = to_double(in.k.floats()), v = to_double(in.v.floats());
  const std::vector<float> mask = in.mask.floats(), d_ctx = in.d_ctx.floats();
  const float scale = 0.7f;
  const Tolerance output = for_this_backend(kF32AgainstFloat64,
                                            attention_output_across_implementations(DType::f32)),
                  gradient = for_this_backend(kGradientAgainstCentralDifferences,
                                              attention_gradient_across_implementations(DType::f32));
  for (const int64_t window : {int64_t{0}, int64_t{1}, int64_t{3}, n.T - 1, n.T, n.T + 7, int64_t{-1}})
    for (const float p : {0.0f, 0.3f}) {
      SCOPED_TRACE(window_name(window, p));
      BandRun run(backend(), n, in.q, in.k, in.v, &in.mask, in.d_ctx);
      run.windowed(*op, scale, window, p, 4242, 1000);
      const Float64Attention want =
          reference_attention(n, q, k, v, mask, &d_ctx, scale, window, p, 4242, 1000);
      expect_close(read(run.ctx), want.ctx, output, "ctx");
      expect_close(read(run.lse), want.lse, kF32AgainstFloat64, "lse");
      expect_close(read(run.dq), want.dq, gradient, "dq");
      expect_close(read(run.dk), want.dk, gradient, "dk");
      expect_close(read(run.dv), want.dv, gradient, "dv");
    }
}

// The header's rule stated directly: with window 1, query T − 1 of a batch row whose last three
// keys are padding sees only padding in its band and averages v over all T keys (no dropout).
TEST_P(WindowedAttention, APaddingQueryWhoseBandHoldsOnlyPaddingIsUniformOverAllKeys) {
  LOOM_OFFERED_OR_SKIP(loom::WindowedAttention, op);
  const Shape n{1, 2, 8, 4};
  Inputs in = random_inputs(n, 111);
  for (int64_t t = 0; t < n.T; ++t) in.mask.set(t, t < n.T - 3 ? 0.0f : loom::kMaskedKey);
  BandRun run(backend(), n, in.q, in.k, in.v, &in.mask, in.d_ctx);
  run.windowed(*op, 0.5f, 1, 0.0f, 0, 0);
  const std::vector<float> ctx = read(run.ctx), v = in.v.floats();
  for (int64_t h = 0; h < n.H; ++h)
    for (int64_t c = 0; c < n.d; ++c) {
      double mean = 0;
      for (int64_t j = 0; j < n.T; ++j) mean += v[(j * n.H + h) * n.d + c] / static_cast<double>(n.T);
      const int64_t i = n.T - 1;
      EXPECT_NEAR(ctx[(i * n.H + h) * n.d + c], mean, 1e-6) << "head " << h << " column " << c;
    }
}

// Padding queries whose band holds only padding have no true gradient (their row is uniform
// whatever the scores); no loss reads them, so their d_ctx is 0 here, as it is in training.
TEST_P(WindowedAttention, GradientsMatchCentralDifferencesOfTheFloat64Reference) {
  LOOM_OFFERED_OR_SKIP(loom::WindowedAttention, op);
  const Shape n{2, 2, 6, 3};
  const float p = 0.3f, scale = 0.6f;
  const Tolerance gradient = for_this_backend(kGradientAgainstCentralDifferences,
                                              attention_gradient_across_implementations(DType::f32));
  for (const int64_t window : {int64_t{0}, int64_t{1}, int64_t{3}, int64_t{-1}}) {
    SCOPED_TRACE(window_name(window, p));
    Inputs in = random_inputs(n, 121);
    const std::vector<float> mask = in.mask.floats();
    for (int64_t b = 0; b < n.B; ++b)
      for (int64_t i = 0; i < n.T; ++i)
        if (only_padding_in_band(mask, b, i, window, n.T))
          for (int64_t e = 0; e < n.H * n.d; ++e) in.d_ctx.set((b * n.T + i) * n.H * n.d + e, 0.0f);
    BandRun run(backend(), n, in.q, in.k, in.v, &in.mask, in.d_ctx);
    run.windowed(*op, scale, window, p, 77, 5);
    const auto q = to_double(in.q.floats()), k = to_double(in.k.floats()), v = to_double(in.v.floats());
    const std::vector<float> w = in.d_ctx.floats();
    const auto loss = [&](const std::vector<double>& qq, const std::vector<double>& kk,
                          const std::vector<double>& vv) {
      return weighted_sum(reference_attention(n, qq, kk, vv, mask, nullptr, scale, window, p, 77, 5).ctx, w);
    };
    expect_close(read(run.dq), numeric_gradient([&](const auto& x) { return loss(x, k, v); }, q), gradient,
                 "dq");
    expect_close(read(run.dk), numeric_gradient([&](const auto& x) { return loss(q, x, v); }, k), gradient,
                 "dk");
    expect_close(read(run.dv), numeric_gradient([&](const auto& x) { return loss(q, k, x); }, v), gradient,
                 "dv");
  }
}

// A band that holds every key is FusedAttention: the same bits on the same backend, with padding,
// a batch row whose keys are all masked, dropout and every storage.
TEST_P(WindowedAttention, AWindowCoveringEveryKeyIsFusedAttentionBitForBit) {
  LOOM_OFFERED_OR_SKIP(loom::WindowedAttention, op);
  LOOM_OFFERED_OR_SKIP(loom::FusedAttention, fused);
  const Shape n{2, 3, 11, 8};
  for (const DType dtype : {DType::f32, DType::bf16, DType::f16}) {
    Inputs in = random_inputs(n, 131, dtype);
    for (int64_t t = 0; t < n.T; ++t) in.mask.set(n.T + t, loom::kMaskedKey);  // batch row 1: all masked
    BandRun want(backend(), n, in.q, in.k, in.v, &in.mask, in.d_ctx);
    want.fused(*fused, 0.35f, 0.2f, 99, 17);
    for (const int64_t window : {n.T - 1, n.T, n.T + 100, std::numeric_limits<int64_t>::max(), int64_t{-1},
                                 std::numeric_limits<int64_t>::min()}) {
      const std::string what = std::string(loom::dtype_name(dtype)) + " " + window_name(window, 0.2f);
      BandRun got(backend(), n, in.q, in.k, in.v, &in.mask, in.d_ctx);
      got.windowed(*op, 0.35f, window, 0.2f, 99, 17);
      got.expect_same_bits_as(want, what);
    }
    // One key less in the band is another function.
    BandRun narrower(backend(), n, in.q, in.k, in.v, &in.mask, in.d_ctx);
    narrower.windowed(*op, 0.35f, n.T - 2, 0.2f, 99, 17);
    EXPECT_NE(read(narrower.ctx), read(want.ctx)) << loom::dtype_name(dtype) << ": window T − 2";
  }
}

TEST_P(WindowedAttention, SixteenBitStorageWithinOneRoundingOfF32) {
  LOOM_OFFERED_OR_SKIP(loom::WindowedAttention, op);
  const Shape n{2, 2, 19, 16};
  for (const DType dtype : {DType::bf16, DType::f16}) {
    SCOPED_TRACE(loom::dtype_name(dtype));
    const Inputs in = random_inputs(n, 141, dtype);  // 16-bit values: both runs see the same ones
    const auto as_f32 = [&](const HostTensor& t) {
      return HostTensor::of(t.floats(), DType::f32, n.activation());
    };
    BandRun f32(backend(), n, as_f32(in.q), as_f32(in.k), as_f32(in.v), &in.mask, in.d_ctx);
    BandRun half(backend(), n, in.q, in.k, in.v, &in.mask, in.d_ctx);
    for (BandRun* run : {&f32, &half}) run->windowed(*op, 0.25f, 3, 0.2f, 5, 0);
    // ctx is f32's rounded once; the gradients carry that rounding through δ = Σ d_ctx·ctx.
    expect_close(read(half.ctx), read(f32.ctx), for_this_backend(one_rounding(dtype), dtype),
                 "ctx: one rounding");
    expect_close(read(half.lse), read(f32.lse), for_this_backend(kSameValuesOtherStorage, DType::f32), "lse");
    expect_close(read(half.dq), read(f32.dq), for_this_backend(kThroughBf16Context, DType::f32), "dq");
    expect_close(read(half.dk), read(f32.dk), for_this_backend(kThroughBf16Context, DType::f32), "dk");
    expect_close(read(half.dv), read(f32.dv), for_this_backend(kSameValuesOtherStorage, DType::f32),
                 "dv (independent of ctx)");
  }
}

// q, k and v as the per-head views of the [B·T, 3·H·d] output of a fused QKV projection (strides
// T·3Hd, d, 3Hd, 1), their gradients into the views of one [B·T, 3·H·d] f32 buffer: the bits of
// contiguous separate tensors, and every element of that buffer written.
TEST_P(WindowedAttention, StridedViewsOfAFusedQkvBufferAreContiguousTensorsBitForBit) {
  LOOM_OFFERED_OR_SKIP(loom::WindowedAttention, op);
  const Shape n{2, 3, 13, 8};
  for (const DType dtype : {DType::f32, DType::bf16}) {
    SCOPED_TRACE(loom::dtype_name(dtype));
    const HostTensor qkv =
        HostTensor::of(random_floats(3 * n.numel(), 151, -2, 2), dtype, {n.B, n.T, 3, n.H, n.d});
    const auto part_of = [&](const HostTensor& fused, int part, DType as) {
      std::vector<float> values(static_cast<size_t>(n.numel()));
      for (int64_t row = 0; row < n.B * n.T; ++row)
        for (int64_t e = 0; e < n.H * n.d; ++e)
          values[static_cast<size_t>(row * n.H * n.d + e)] = fused.get((row * 3 + part) * n.H * n.d + e);
      return HostTensor::of(values, as, n.activation());
    };
    const HostTensor d_ctx = HostTensor::of(random_floats(n.numel(), 152), DType::f32, n.activation()),
                     mask = padding_mask(n);
    BandRun want(backend(), n, part_of(qkv, 0, dtype), part_of(qkv, 1, dtype), part_of(qkv, 2, dtype), &mask,
                 d_ctx);
    want.windowed(*op, 0.3f, 2, 0.1f, 7, 3);

    DeviceTensor qkv_dev = upload(qkv), d_ctx_dev = upload(d_ctx), mask_dev = upload(mask),
                 ctx = upload_zeros(dtype, n.activation()), lse = upload_zeros(DType::f32, {n.B, n.H, n.T}),
                 delta = upload_zeros(DType::f32, {n.B, n.H, n.T}),
                 d_qkv = upload(HostTensor::of(std::vector<float>(3 * n.numel(), NAN), DType::f32,
                                               {n.B, n.T, 3, n.H, n.d}));
    const auto part = [](const DeviceTensor& fused, int index) {
      return heads(fused.view().select(2, index));
    };
    op->windowed_attention_forward(part(qkv_dev, 0), part(qkv_dev, 1), part(qkv_dev, 2), mask_dev.view(),
                                   0.3f, 2, 0.1f, 7, 3, heads(ctx.view()), lse.view());
    op->windowed_attention_backward(heads(d_ctx_dev.view()), part(qkv_dev, 0), part(qkv_dev, 1),
                                    part(qkv_dev, 2), heads(ctx.view()), lse.view(), mask_dev.view(), 0.3f, 2,
                                    0.1f, 7, 3, part(d_qkv, 0), part(d_qkv, 1), part(d_qkv, 2), delta.view());
    expect_same_bits(ctx.download(), want.ctx.download(), "ctx");
    expect_same_bits(lse.download(), want.lse.download(), "lse");
    const HostTensor gradients = d_qkv.download();
    const DeviceTensor* wanted[3] = {&want.dq, &want.dk, &want.dv};
    for (int index = 0; index < 3; ++index)
      expect_same_bits(part_of(gradients, index, DType::f32), wanted[index]->download(),
                       index == 0   ? "dq"
                       : index == 1 ? "dk"
                                    : "dv");
  }
}

// At a size whose rows the backend splits across its threads, against the reference backend (one
// thread): its bits where the backend runs its code; and a second backward repeats the first.
TEST_P(WindowedAttention, AsTheReferenceBackendAndRepeatable) {
  LOOM_OFFERED_OR_SKIP(loom::WindowedAttention, op);
  loom::WindowedAttention* const reference_op = reference_offers<loom::WindowedAttention>();
  ASSERT_NE(reference_op, nullptr);
  const Shape n{2, 4, 64, 32};
  for (const int64_t window : {int64_t{5}, int64_t{40}}) {
    SCOPED_TRACE(window_name(window, 0.1f));
    const Inputs in = random_inputs(n, 161);
    const float scale = 1.0f / std::sqrt(static_cast<float>(n.d));
    BandRun got(backend(), n, in.q, in.k, in.v, &in.mask, in.d_ctx);
    got.windowed(*op, scale, window, 0.1f, 0xabcdef, 12345);
    BandRun want(reference(), n, in.q, in.k, in.v, &in.mask, in.d_ctx);
    want.windowed(*reference_op, scale, window, 0.1f, 0xabcdef, 12345);
    if (runs_reference_code()) {
      got.expect_same_bits_as(want, "as the reference");
    } else {
      const Tolerance output = attention_output_across_implementations(DType::f32),
                      gradient = attention_gradient_across_implementations(DType::f32);
      expect_close(read(got.ctx), read(want.ctx), output, "ctx");
      expect_close(read(got.lse), read(want.lse), kLogSumExpAcrossImplementations, "lse");
      expect_close(read(got.dq), read(want.dq), gradient, "dq");
      expect_close(read(got.dk), read(want.dk), gradient, "dk");
      expect_close(read(got.dv), read(want.dv), gradient, "dv");
    }
    const std::vector<float> dk = read(got.dk);
    got.windowed(*op, scale, window, 0.1f, 0xabcdef, 12345);
    expect_equal(read(got.dk), dk, "dk of a second run");
  }
}

TEST_P(WindowedAttention, AWrongLseShapeIsNamed) {
  LOOM_OFFERED_OR_SKIP(loom::WindowedAttention, op);
  const Shape n{1, 2, 4, 8};
  const Inputs in = random_inputs(n, 171);
  DeviceTensor q = upload(in.q), k = upload(in.k), v = upload(in.v),
               ctx = upload_zeros(DType::f32, n.activation()),
               lse = upload_zeros(DType::f32, {n.B, n.H, n.T + 1});
  expect_error_naming(
      [&] {
        op->windowed_attention_forward(heads(q.view()), heads(k.view()), heads(v.view()), Tensor{}, 1.0f, 1,
                                       0.0f, 0, 0, heads(ctx.view()), lse.view());
      },
      {"windowed_attention_forward: lse"});
}

}  // namespace
}  // namespace loom_backend_ops
