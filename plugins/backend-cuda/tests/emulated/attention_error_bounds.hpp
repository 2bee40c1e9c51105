// Per-element bounds on how far the Tensor-Core attention kernels may land from backend/cpu's
// fused attention on the same 16-bit inputs, from a float64 recomputation of the same function.
// Used by the CPU-driven kernel tests (flash_attention_emulated_test.cpp) and the GPU tests
// (../attention_test.cpp), with expect_within, the check against them.
//
// u: the storage type's unit roundoff (2⁻⁸ bf16, 2⁻¹¹ f16); e32(n) = 2n·2⁻²⁴ bounds two f32 sums of
// n terms taken in different orders. The kernels round P̃ and dS to the storage type for their
// mma (FlashAttention's choice) and dO too when it comes in f32; the rest is f32 on both sides.
//   ctx  2u·|ctx| (both round once) + (u + e32(T))·Σ_j P̃_ij·|v_jc|
//   lse  e32(d)·scale·max_j Σ_c |q_ic·k_jc| + 1e-6·(1 + |lse|)         (dot products, exp/log)
//   dv   Σ_i P̃_ij·|dO_ic|·(u_P + u_dO + e_s,ij + e32(T))
//   dk   scale·Σ_i |q_ic|·((u + e32(T))·|dS_ij| + E_ij); dq likewise over j with |k_jc|, where
//        e_s,ij = e32(d)·scale·Σ_c |q_ic·k_jc| + 2⁻²⁰ bounds P_ij's relative error (its score's
//        f32 error, exp) and E_ij = P_ij·keep_ij/(1 − p)·(u_dO + e32(d))·Σ_c |dO_ic·v_jc| +
//        e_s,ij·|dS_ij| that of dS_ij before its rounding.
// With a window (windowed attention), a pair outside the band counts as a masked key, and a row
// with no allowed key in its band is uniform over all T keys, as the header prescribes.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "loom/sdk/backend.hpp"
#include "loom/sdk/philox.hpp"

namespace loom_cuda::flash_test {

/// One call's inputs as f32 values, activations in the encoder's [B, T, H, d] layout.
struct AttentionProblem {
  int64_t batch, heads, seq, head_dim;
  float scale, p;
  uint64_t seed, offset;
  const float *q, *k, *v;
  const float* d_ctx;   // as the reference reads it
  const float* ctx;     // the ctx both backwards read
  const float* mask;    // [B, T] additive (0 / kMaskedKey)
  double u;             // unit roundoff of the storage type
  bool d_ctx_rounded;   // the kernels round d_ctx to the storage type (it comes in f32)
  int64_t window = -1;  // the band |i − j| ≤ window of windowed attention; < 0: none
};

struct AttentionBounds {
  std::vector<double> ctx, lse, dq, dk, dv;  // ctx, dq, dk, dv: [B, T, H, d]; lse: [B, H, T]
};

inline AttentionBounds attention_error_bounds(const AttentionProblem& a) {
  const int64_t B = a.batch, H = a.heads, T = a.seq, d = a.head_dim;
  const auto e32 = [](int64_t n) { return 2.0 * static_cast<double>(n) * 0x1p-24; };
  const double u = a.u, u_g = a.d_ctx_rounded ? a.u : 0.0, inv_keep = 1.0 / (1.0 - a.p);
  const uint32_t threshold = loom::dropout_threshold(a.p);
  const size_t n = static_cast<size_t>(B * T * H * d);
  AttentionBounds out{std::vector<double>(n), std::vector<double>(static_cast<size_t>(B * H * T)),
                      std::vector<double>(n), std::vector<double>(n), std::vector<double>(n)};
  const auto at = [&](int64_t b, int64_t t, int64_t h, int64_t c) { return ((b * T + t) * H + h) * d + c; };

  const auto one_head = [&](int64_t bh) {
    const int64_t b = bh / H, h = bh % H;
    std::vector<double> P(static_cast<size_t>(T * T)), dS(P.size()), E(P.size()), es(P.size()), s(T);
    for (int64_t i = 0; i < T; ++i) {
      double max_s = -INFINITY, max_abs_dot = 0;
      bool all_masked = true;
      for (int64_t j = 0; j < T; ++j) {
        double dot = 0, abs_dot = 0;
        for (int64_t c = 0; c < d; ++c) {
          const double term = double{a.q[at(b, i, h, c)]} * a.k[at(b, j, h, c)];
          dot += term;
          abs_dot += std::abs(term);
        }
        es[i * T + j] = e32(d) * a.scale * abs_dot + 0x1p-20;
        max_abs_dot = std::max(max_abs_dot, a.scale * abs_dot);
        const bool masked = (a.mask != nullptr && a.mask[b * T + j] == loom::kMaskedKey) ||
                            (a.window >= 0 && (i - j > a.window || j - i > a.window));
        all_masked = all_masked && masked;
        s[j] = masked ? -INFINITY : a.scale * dot + (a.mask != nullptr ? a.mask[b * T + j] : 0.0);
        max_s = std::max(max_s, s[j]);
      }
      double l = 0;
      for (int64_t j = 0; j < T; ++j) l += all_masked ? 1.0 : std::exp(s[j] - max_s);
      // A row whose keys are all masked has lse = kMaskedKey exactly on both sides.
      out.lse[static_cast<size_t>(bh * T + i)] =
          all_masked ? 0.0 : e32(d) * max_abs_dot + 1e-6 * (1 + std::abs(max_s + std::log(l)));
      double delta = 0;
      for (int64_t c = 0; c < d; ++c) delta += double{a.d_ctx[at(b, i, h, c)]} * a.ctx[at(b, i, h, c)];
      for (int64_t j = 0; j < T; ++j) {
        const double prob = all_masked ? 1.0 / static_cast<double>(T) : std::exp(s[j] - max_s) / l;
        const bool keep =
            a.p == 0.0f ||
            loom::philox_word(a.seed, a.offset + static_cast<uint64_t>((bh * T + i) * T + j)) >= threshold;
        double dp = 0, abs_dp = 0;
        for (int64_t c = 0; c < d; ++c) {
          const double term = double{a.d_ctx[at(b, i, h, c)]} * a.v[at(b, j, h, c)];
          dp += term;
          abs_dp += std::abs(term);
        }
        const double kept = keep ? inv_keep : 0.0;
        P[i * T + j] = prob * kept;  // P̃
        dS[i * T + j] = prob * (kept * dp - delta);
        E[i * T + j] = prob * kept * (u_g + e32(d)) * abs_dp + es[i * T + j] * std::abs(dS[i * T + j]);
      }
    }
    for (int64_t i = 0; i < T; ++i)
      for (int64_t c = 0; c < d; ++c) {
        double weighted = 0, dq_sum = 0;
        for (int64_t j = 0; j < T; ++j) {
          weighted += P[i * T + j] * std::abs(a.v[at(b, j, h, c)]);
          dq_sum += std::abs(a.k[at(b, j, h, c)]) * ((u + e32(T)) * std::abs(dS[i * T + j]) + E[i * T + j]);
        }
        const auto e = static_cast<size_t>(at(b, i, h, c));
        out.ctx[e] = 2 * u * std::abs(a.ctx[e]) + (u + e32(T)) * weighted;
        out.dq[e] = a.scale * dq_sum;
      }
    for (int64_t j = 0; j < T; ++j)
      for (int64_t c = 0; c < d; ++c) {
        double dv_sum = 0, dk_sum = 0;
        for (int64_t i = 0; i < T; ++i) {
          dv_sum += P[i * T + j] * std::abs(a.d_ctx[at(b, i, h, c)]) * (u + u_g + es[i * T + j] + e32(T));
          dk_sum += std::abs(a.q[at(b, i, h, c)]) * ((u + e32(T)) * std::abs(dS[i * T + j]) + E[i * T + j]);
        }
        const auto e = static_cast<size_t>(at(b, j, h, c));
        out.dv[e] = dv_sum;
        out.dk[e] = a.scale * dk_sum;
      }
  };

  // Heads are independent: spread them over the cores (production sizes have thousands).
  const int64_t heads_total = B * H;
  const int64_t workers =
      std::max<int64_t>(1, std::min<int64_t>(heads_total, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (int64_t w = 0; w < workers; ++w)
    pool.emplace_back([&, w] {
      for (int64_t bh = w; bh < heads_total; bh += workers) one_head(bh);
    });
  for (auto& t : pool) t.join();
  return out;
}

/// Element-wise |actual − expected| ≤ bound; reports the worst excess.
inline void expect_within(const std::vector<float>& actual, const std::vector<float>& expected,
                          const std::vector<double>& bound, const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size());
  double worst = 0, largest_share = 0;
  size_t worst_at = 0, failures = 0;
  for (size_t i = 0; i < actual.size(); ++i) {
    const double error = std::abs(static_cast<double>(actual[i]) - expected[i]), excess = error - bound[i];
    if (bound[i] > 0) largest_share = std::max(largest_share, error / bound[i]);
    if (!(excess <= 0)) ++failures;
    if (!(excess <= worst)) worst = std::isnan(excess) ? INFINITY : excess, worst_at = i;
  }
  // How much of its bound the worst element uses (printed: a bound far above every error tests little).
  std::printf("%s: largest error / bound %.3f\n", what.c_str(), largest_share);
  EXPECT_EQ(failures, 0u) << what << ": worst at " << worst_at << ": " << actual[worst_at] << " vs "
                          << expected[worst_at] << " (bound " << bound[worst_at] << ", excess " << worst
                          << ")";
}

}  // namespace loom_cuda::flash_test
