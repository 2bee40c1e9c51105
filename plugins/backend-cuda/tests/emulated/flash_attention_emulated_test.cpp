// The Tensor-Core attention kernels (flash_attention_forward.cuh, flash_attention_backward.cuh)
// run on the CPU, lane by lane (lane_emulator), against backend/cpu's fused attention on the same
// 16-bit inputs: per-head views of a [B·T, H·d] activation, T with tails (1, 37, 64, 77, 130, 200),
// a padding mask and a batch whose keys are all masked, dropout on and off, bf16 and f16, d = 64
// and 128, an f32 incoming gradient (as the encoder layer passes it) and a 16-bit one.
//
// Bounds, per element, from a float64 recomputation of the same function (u: the storage type's
// unit roundoff, 2⁻⁸ bf16, 2⁻¹¹ f16; e32(n) = 2n·2⁻²⁴, two f32 sums of n terms):
//   ctx  2u·|ctx| (both round once) + (u + e32(T))·Σ_j P̃_ij·|v_jc|   (P̃ rounded for the mma)
//   lse  e32(d)·scale·max_j Σ_c |q_ic·k_jc| + 1e-6·(1 + |lse|)        (f32 dot products, exp/log)
//   dv   (2u + e_s + e32(T))·Σ_i P̃_ij·|dO_ic|                         (P̃ and dO rounded)
//   dk   scale·Σ_i |q_ic|·((u + e32(T))·|dS_ij| + E_ij), dq likewise over j with |k_jc|, where
//        E_ij = P_ij·(keep_ij/(1 − p)·(u + e32(d))·Σ_c |dO_ic·v_jc|) + e_s·|dS_ij| bounds the error
//        of dS_ij before its rounding, and e_s = e32(d)·scale·Σ_c |q_ic·k_jc| + 2⁻²⁰ that of P_ij.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cpu_backend.hpp"
#include "flash_attention_backward.cuh"
#include "flash_attention_forward.cuh"
#include "lane_emulator.hpp"
#include "loom/sdk/backend.hpp"

namespace loom_cuda::flash {
namespace {

using loom::DType;

struct Case {
  int64_t seq;
  int head_dim;
  DType dtype;
  float p;
  bool batch1_all_masked;
  bool f32_gradient;
};

void PrintTo(const Case& c, std::ostream* out) {
  *out << "T=" << c.seq << " d=" << c.head_dim << " " << loom::dtype_name(c.dtype) << " p=" << c.p
       << (c.batch1_all_masked ? " batch 1 all masked" : "") << (c.f32_gradient ? " f32 d_ctx" : " 16-bit d_ctx");
}

template <typename S>
S round_to(float v) {
  if constexpr (std::is_same_v<S, loom::BFloat16>)
    return S{loom::f32_to_bf16_bits(v)};
  else
    return S{loom::f32_to_f16_bits(v)};
}

template <typename S>
std::vector<S> rounded(const std::vector<float>& v) {
  std::vector<S> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = round_to<S>(v[i]);
  return out;
}

template <typename S>
std::vector<float> widened(const std::vector<S>& v) {
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = lane::widen<S>(v[i].bits);
  return out;
}

std::vector<float> random_floats(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 engine(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(engine);
  return v;
}

/// Runs kernel body K over the grid (blocks_x, bh_count) on the CPU; shared memory starts as NaN
/// bytes in every block, so reading anything not staged shows.
template <typename K, typename Args>
void run_grid(const Args& args, int64_t blocks_x, int64_t bh_count) {
  std::vector<uint32_t> shared(K::kSharedBytes / 4 + 4);
  for (int64_t bh = 0; bh < bh_count; ++bh)
    for (int64_t x = 0; x < blocks_x; ++x) {
      std::memset(shared.data(), 0xff, shared.size() * 4);
      auto* base = reinterpret_cast<unsigned char*>(shared.data());
      const auto errors = emulation::run_block(
          K::kThreads, [&](int thread) { K::run(args, base, static_cast<int>(x), bh, thread); });
      ASSERT_TRUE(errors.empty()) << "block (" << x << ", " << bh << "): " << errors.front();
    }
}

/// Element-wise |actual − expected| ≤ bound; reports the worst excess.
void expect_within(const std::vector<float>& actual, const std::vector<float>& expected,
                   const std::vector<double>& bound, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size());
  double worst = 0;
  size_t worst_at = 0, failures = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    const double excess = std::abs(static_cast<double>(actual[i]) - expected[i]) - bound[i];
    if (!(excess <= 0)) ++failures;
    if (!(excess <= worst)) worst = std::isnan(excess) ? INFINITY : excess, worst_at = i;
  }
  EXPECT_EQ(failures, 0u) << what << ": worst at " << worst_at << ": " << actual[worst_at] << " vs "
                          << expected[worst_at] << " (bound " << bound[worst_at] << ", excess " << worst << ")";
}

class FlashAttentionEmulated : public ::testing::TestWithParam<Case> {};

template <typename S, int kD>
void check(const Case& cs) {
  const int64_t B = 2, H = 2, T = cs.seq, d = kD, BH = B * H;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  const uint64_t seed = 0x5eedull, offset = 777;
  const double u = std::is_same_v<S, loom::BFloat16> ? 0x1p-8 : 0x1p-11;
  const auto e32 = [](int64_t n) { return 2.0 * static_cast<double>(n) * 0x1p-24; };

  // [B, T, H, d] activations (the encoder's [B·T, H·d]); the kernels see per-head views.
  const size_t n = static_cast<size_t>(B * T * H * d);
  std::vector<S> q = rounded<S>(random_floats(n, 1, -2.0f, 2.0f)), k = rounded<S>(random_floats(n, 2, -2.0f, 2.0f)),
                 v = rounded<S>(random_floats(n, 3, -1.0f, 1.0f));
  std::vector<float> d_ctx = random_floats(n, 4, -1.0f, 1.0f);
  std::vector<S> d_ctx16 = rounded<S>(d_ctx);
  if (!cs.f32_gradient) d_ctx = widened(d_ctx16);
  std::vector<float> mask(static_cast<size_t>(B * T), 0.0f);
  for (int64_t t = 0; t < T; ++t) {
    if (T > 1 && t >= (2 * T + 2) / 3) mask[t] = loom::kMaskedKey;
    if (cs.batch1_all_masked) mask[T + t] = loom::kMaskedKey;
  }
  const DType storage = cs.dtype;
  const auto heads = [&](void* data, DType dtype) {
    return loom::Tensor::contiguous(data, dtype, {B, T, H, d}).permute({0, 2, 1, 3});
  };

  // backend/cpu's fused attention: the reference.
  loom_cpu::CpuBackend cpu(1, true);
  std::vector<S> ctx_ref(n);
  std::vector<float> lse_ref(static_cast<size_t>(BH * T)), delta(static_cast<size_t>(BH * T));
  std::vector<float> dq_ref(n), dk_ref(n), dv_ref(n);
  const loom::Tensor mask_t = loom::Tensor::contiguous(mask.data(), DType::f32, {B, T});
  cpu.attention_forward(heads(q.data(), storage), heads(k.data(), storage), heads(v.data(), storage), mask_t,
                        scale, cs.p, seed, offset, heads(ctx_ref.data(), storage),
                        loom::Tensor::contiguous(lse_ref.data(), DType::f32, {B, H, T}));
  cpu.attention_backward(cs.f32_gradient ? heads(d_ctx.data(), DType::f32) : heads(d_ctx16.data(), storage),
                         heads(q.data(), storage), heads(k.data(), storage), heads(v.data(), storage),
                         heads(ctx_ref.data(), storage), loom::Tensor::contiguous(lse_ref.data(), DType::f32, {B, H, T}),
                         mask_t, scale, cs.p, seed, offset, heads(dq_ref.data(), DType::f32),
                         heads(dk_ref.data(), DType::f32), heads(dv_ref.data(), DType::f32),
                         loom::Tensor::contiguous(delta.data(), DType::f32, {B, H, T}));

  // The kernels, lane by lane.
  const AttentionShape shape{B, H, T, d, scale, cs.p > 0.0f, loom::dropout_threshold(cs.p), 1.0f / (1.0f - cs.p),
                             seed, offset};
  const auto rows_of = [&](auto* data) {
    using T_ = std::remove_pointer_t<decltype(data)>;
    return HeadRows<T_>{data, T * H * d, d, H * d};
  };
  std::vector<S> ctx(n);
  std::vector<float> lse(static_cast<size_t>(BH * T)), dq(n, NAN), dk(n, NAN), dv(n, NAN);
  const ForwardArgs<S> fa{rows_of(static_cast<const S*>(q.data())), rows_of(static_cast<const S*>(k.data())),
                          rows_of(static_cast<const S*>(v.data())), rows_of(ctx.data()), lse.data(), mask.data(), shape};
  const int64_t blocks = (T + 63) / 64;
  run_grid<Forward<S, kD>>(fa, blocks, BH);
  const auto backward = [&](const auto& g_rows) {
    using G = std::remove_cv_t<std::remove_pointer_t<decltype(g_rows.data)>>;
    const BackwardArgs<S, G> ba{rows_of(static_cast<const S*>(q.data())), rows_of(static_cast<const S*>(k.data())),
                                rows_of(static_cast<const S*>(v.data())), g_rows, lse_ref.data(), delta.data(),
                                mask.data(), rows_of(dq.data()), rows_of(dk.data()), rows_of(dv.data()), shape};
    run_grid<KeyGrads<S, G, kD>>(ba, blocks, BH);
    run_grid<QueryGrads<S, G, kD>>(ba, blocks, BH);
  };
  if (cs.f32_gradient)
    backward(rows_of(static_cast<const float*>(d_ctx.data())));
  else
    backward(rows_of(static_cast<const S*>(d_ctx16.data())));

  // Float64 recomputation for the bounds.
  const std::vector<float> qf = widened(q), kf = widened(k), vf = widened(v), ctxf = widened(ctx_ref);
  const std::vector<float> gf = cs.f32_gradient ? d_ctx : widened(d_ctx16);
  const auto at = [&](int64_t b, int64_t t, int64_t h, int64_t c) { return ((b * T + t) * H + h) * d + c; };
  std::vector<double> ctx_bound(n), lse_bound(static_cast<size_t>(BH * T)), dq_bound(n, 0.0), dk_bound(n, 0.0),
      dv_bound(n, 0.0);
  const double inv_keep = 1.0 / (1.0 - cs.p);
  std::vector<double> P(static_cast<size_t>(T * T)), dS(static_cast<size_t>(T * T)), E(static_cast<size_t>(T * T)),
      es(static_cast<size_t>(T * T));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t bh = b * H + h;
      for (int64_t i = 0; i < T; ++i) {
        std::vector<double> s(T);
        double max_s = -INFINITY, max_abs_dot = 0;
        bool all_masked = true;
        for (int64_t j = 0; j < T; ++j) {
          double dot = 0, abs_dot = 0;
          for (int64_t c = 0; c < d; ++c) {
            dot += double{qf[at(b, i, h, c)]} * kf[at(b, j, h, c)];
            abs_dot += std::abs(double{qf[at(b, i, h, c)]} * kf[at(b, j, h, c)]);
          }
          es[i * T + j] = e32(d) * scale * abs_dot + 0x1p-20;
          max_abs_dot = std::max(max_abs_dot, scale * abs_dot);
          const bool masked = mask[b * T + j] == loom::kMaskedKey;
          all_masked = all_masked && masked;
          s[j] = masked ? -INFINITY : scale * dot;
          max_s = std::max(max_s, s[j]);
        }
        double l = 0;
        for (int64_t j = 0; j < T; ++j) l += all_masked ? 1.0 : std::exp(s[j] - max_s);
        const size_t row = static_cast<size_t>(bh * T + i);
        lse_bound[row] = e32(d) * max_abs_dot + 1e-6 * (1 + std::abs(lse_ref[row]));
        double delta_i = 0;
        for (int64_t c = 0; c < d; ++c) delta_i += double{gf[at(b, i, h, c)]} * ctxf[at(b, i, h, c)];
        for (int64_t j = 0; j < T; ++j) {
          const double p = all_masked ? 1.0 / static_cast<double>(T) : std::exp(s[j] - max_s) / l;
          const bool keep = cs.p == 0.0f || loom::philox_word(seed, offset + static_cast<uint64_t>((bh * T + i) * T + j)) >=
                                                shape.threshold;
          double dp = 0, abs_dp = 0;
          for (int64_t c = 0; c < d; ++c) {
            dp += double{gf[at(b, i, h, c)]} * vf[at(b, j, h, c)];
            abs_dp += std::abs(double{gf[at(b, i, h, c)]} * vf[at(b, j, h, c)]);
          }
          const double kept = keep ? inv_keep : 0.0;
          P[i * T + j] = p * kept;  // P̃
          dS[i * T + j] = p * (kept * dp - delta_i);
          E[i * T + j] = p * kept * (u + e32(d)) * abs_dp + es[i * T + j] * std::abs(dS[i * T + j]);
        }
      }
      for (int64_t i = 0; i < T; ++i)
        for (int64_t c = 0; c < d; ++c) {
          double weighted = 0, dq_sum = 0;
          for (int64_t j = 0; j < T; ++j) {
            weighted += P[i * T + j] * std::abs(vf[at(b, j, h, c)]);
            dq_sum += std::abs(kf[at(b, j, h, c)]) * ((u + e32(T)) * std::abs(dS[i * T + j]) + E[i * T + j]);
          }
          const size_t e = static_cast<size_t>(at(b, i, h, c));
          ctx_bound[e] = 2 * u * std::abs(ctxf[e]) + (u + e32(T)) * weighted;
          dq_bound[e] = scale * dq_sum;
        }
      for (int64_t j = 0; j < T; ++j)
        for (int64_t c = 0; c < d; ++c) {
          double dv_sum = 0, dk_sum = 0;
          for (int64_t i = 0; i < T; ++i) {
            dv_sum += P[i * T + j] * std::abs(gf[at(b, i, h, c)]) * (2 * u + es[i * T + j] + e32(T));
            dk_sum += std::abs(qf[at(b, i, h, c)]) * ((u + e32(T)) * std::abs(dS[i * T + j]) + E[i * T + j]);
          }
          const size_t e = static_cast<size_t>(at(b, j, h, c));
          dv_bound[e] = dv_sum;
          dk_bound[e] = scale * dk_sum;
        }
    }

  expect_within(widened(ctx), ctxf, ctx_bound, "ctx");
  expect_within(lse, lse_ref, lse_bound, "lse");
  expect_within(dv, dv_ref, dv_bound, "dv");
  expect_within(dk, dk_ref, dk_bound, "dk");
  expect_within(dq, dq_ref, dq_bound, "dq");
}

TEST_P(FlashAttentionEmulated, MatchesBackendCpuWithinDerivedBounds) {
  const Case cs = GetParam();
  if (cs.dtype == DType::bf16)
    cs.head_dim == 64 ? check<loom::BFloat16, 64>(cs) : check<loom::BFloat16, 128>(cs);
  else
    cs.head_dim == 64 ? check<loom::Half, 64>(cs) : check<loom::Half, 128>(cs);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, FlashAttentionEmulated,
    ::testing::Values(Case{1, 64, DType::bf16, 0.0f, false, true}, Case{37, 64, DType::bf16, 0.1f, true, true},
                      Case{64, 64, DType::f16, 0.0f, false, false}, Case{77, 64, DType::bf16, 0.1f, false, false},
                      Case{130, 64, DType::f16, 0.1f, true, true}, Case{37, 128, DType::bf16, 0.0f, true, true},
                      Case{77, 128, DType::f16, 0.1f, false, true}, Case{200, 128, DType::bf16, 0.1f, true, true}));

}  // namespace
}  // namespace loom_cuda::flash
