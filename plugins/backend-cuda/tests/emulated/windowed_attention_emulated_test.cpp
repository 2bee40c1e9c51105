// The sliding-window band of windowed attention (loom/sdk/ops/windowed_attention.hpp) in the
// Tensor-Core attention kernels, run on the CPU lane by lane (lane_emulator): the empty-band
// flags (attention_band.cuh's EmptyBands, a ballot per 32 keys), the tiles each block walks
// (TileWalk), and the forward, dK/dV and dQ kernels with the band, against a float64 reference of
// the header's semantics — a pair outside the band scores kMaskedKey, a row with no allowed key in
// its band (a padding query whose band holds only padding keys) is uniform over all T keys — within
// the bounds of attention_error_bounds.hpp, which apply the same semantics.
//
// Cases: windows 0, 1, 3, 5, windows whose bands cross the 64- and 32-row tiles (40, 70), windows
// that reach every key (T − 1 and more: the same bits as no window), right-padded rows (rows past
// the last allowed key by more than the window have empty bands), left padding, a batch row with
// every key masked, d = 64 and 128, T not a multiple of the tiles (77, 130, 200, 300), dropout on
// and off, bf16 and f16, f32 and 16-bit incoming gradients.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "attention_band.cuh"
#include "attention_error_bounds.hpp"
#include "backend_ops/references.hpp"
#include "emulated_grid.hpp"
#include "flash_attention_backward.cuh"
#include "flash_attention_forward.cuh"
#include "lane_emulator.hpp"
#include "loom/sdk/backend.hpp"
#include "loom/sdk/philox.hpp"

namespace loom_cuda::flash {
namespace {

using emulation::rounded;
using emulation::run_grid;
using emulation::widened;
using loom::DType;
using loom_backend_ops::random_floats;

/// Which keys of a batch row the key mask masks.
enum class Padding { none, right, left, all };

const char* name_of(Padding padding) {
  switch (padding) {
    case Padding::none:
      return "none";
    case Padding::right:
      return "right";
    case Padding::left:
      return "left";
    case Padding::all:
      return "all";
  }
  return "?";
}

/// Row b of a [B, T] additive key mask: right padding keeps the first ⌊(2T + 2)/3⌋ keys (as the
/// fused attention test does), left padding masks the first ⌊T/4⌋.
void pad(std::vector<float>& mask, int64_t b, int64_t T, Padding padding) {
  for (int64_t t = 0; t < T; ++t) {
    const bool masked = padding == Padding::all ||
                        (padding == Padding::right && T > 1 && t >= (2 * T + 2) / 3) ||
                        (padding == Padding::left && t < T / 4);
    mask[b * T + t] = masked ? loom::kMaskedKey : 0.0f;
  }
}

/// The band as the header states it, written here apart from the kernels' band::in_band.
bool within_window(int64_t window, int64_t i, int64_t j) {
  return window < 0 || std::abs(i - j) <= window;
}

/// Whether query i of batch row b has no allowed key in its band (mask > kMaskedKey / 2 allows).
bool band_is_empty(const std::vector<float>& mask, int64_t b, int64_t T, int64_t window, int64_t i) {
  for (int64_t j = 0; j < T; ++j)
    if (within_window(window, i, j) && mask[b * T + j] > 0.5f * loom::kMaskedKey) return false;
  return true;
}

/// The flags EmptyBands must make: one per 16 query rows.
std::vector<uint8_t> expected_flags(const std::vector<float>& mask, int64_t B, int64_t T, int64_t window) {
  const int64_t groups = band::flag_groups(T);
  std::vector<uint8_t> flags(static_cast<size_t>(B * groups), 0);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < T; ++i)
      if (band_is_empty(mask, b, T, window, i))
        flags[static_cast<size_t>(b * groups + i / band::kFlagRows)] = 1;
  return flags;
}

/// EmptyBands lane by lane (grid ⌈T/128⌉ × B), into flags that start as 0xee so an unwritten one shows.
std::vector<uint8_t> emulated_flags(const std::vector<float>& mask, int64_t B, int64_t T, int64_t window) {
  std::vector<uint8_t> flags(static_cast<size_t>(B * band::flag_groups(T)), 0xee);
  AttentionShape shape{B, 1, T, 64, 1.0f, false, 0u, 1.0f, 0, 0, window};
  const band::EmptyBandArgs args{mask.data(), flags.data(), shape};
  run_grid<band::EmptyBands>(args, (T + band::EmptyBands::kThreads - 1) / band::EmptyBands::kThreads, B);
  return flags;
}

TEST(WindowedAttentionBand, EmptyBandFlagsMarkEveryGroupHoldingARowWithNoAllowedKeyInItsBand) {
  std::mt19937 engine(7);
  for (const int64_t T : {1, 16, 31, 32, 33, 100, 129, 300}) {
    for (const int64_t window :
         {int64_t{0}, int64_t{1}, int64_t{3}, int64_t{17}, int64_t{40}, T - 1, T + 3}) {
      for (int pattern = 0; pattern < 6; ++pattern) {
        const int64_t B = 2;
        std::vector<float> mask(static_cast<size_t>(B * T));
        pad(mask, 0, T, pattern == 0 ? Padding::right : pattern == 1 ? Padding::left : Padding::none);
        // Batch row 1: every key masked, or keys masked at random with probability 1/4, 3/4, 15/16.
        const double masked_share[] = {1.0, 0.25, 0.75, 0.9375, 0.0, 0.5};
        std::bernoulli_distribution masked(masked_share[pattern]);
        for (int64_t t = 0; t < T; ++t)
          mask[static_cast<size_t>(T + t)] = masked(engine) ? loom::kMaskedKey : 0.0f;
        const std::vector<uint8_t> got = emulated_flags(mask, B, T, window);
        EXPECT_EQ(got, expected_flags(mask, B, T, window))
            << "T = " << T << ", window " << window << ", pattern " << pattern;
      }
    }
  }
}

TEST(WindowedAttentionBand, WalksVisitEveryTileTheBandMeetsAndNoOther) {
  for (const int64_t T : {1, 37, 64, 77, 130, 200, 300}) {
    for (const int64_t window : {int64_t{-1}, int64_t{0}, int64_t{1}, int64_t{3}, int64_t{31}, int64_t{32},
                                 int64_t{40}, int64_t{64}, int64_t{70}, T - 2, T - 1, T + 5}) {
      // One batch row, rows 40..59 and 150.. flagged (empty bands) where they exist.
      std::vector<uint8_t> flags(static_cast<size_t>(band::flag_groups(T)), 0);
      for (int64_t i = 40; i < T && i < 60; ++i) flags[static_cast<size_t>(i / band::kFlagRows)] = 1;
      for (int64_t i = 150; i < T; ++i) flags[static_cast<size_t>(i / band::kFlagRows)] = 1;
      const AttentionShape shape{1, 1, T, 64, 1.0f, false, 0u, 1.0f, 0, 0, window};
      const auto flagged_rows = [&](int64_t r0, int64_t r1) {  // a flag among rows [r0, r1)
        for (int64_t r = r0; r < r1 && r < T; ++r)
          if (window >= 0 && flags[static_cast<size_t>(r / band::kFlagRows)] != 0) return true;
        return false;
      };
      const auto meets_band = [&](int64_t own0, int64_t own1, int64_t other0, int64_t other1) {
        for (int64_t i = own0; i < own1 && i < T; ++i)
          for (int64_t j = other0; j < other1 && j < T; ++j)
            if (within_window(window, i, j)) return true;
        return false;
      };
      for (const int own : {16, 64})
        for (const int tile : {32, 64})
          for (int64_t r0 = 0; r0 < T; r0 += own) {
            const band::TileWalk queries = band::query_block_walk(shape, flags.data(), 0, r0, own, tile);
            const band::TileWalk keys = band::key_block_walk(shape, flags.data(), 0, r0, own, tile);
            std::vector<int> visited_q, visited_k, expected_q, expected_k;
            for (int n = queries.begin(); n < queries.count; n = queries.next(n)) visited_q.push_back(n);
            for (int n = keys.begin(); n < keys.count; n = keys.next(n)) visited_k.push_back(n);
            const bool own_flagged = flagged_rows(r0, r0 + own);
            for (int n = 0; n * tile < T; ++n) {
              const bool band_meets = meets_band(r0, r0 + own, int64_t{n} * tile, int64_t{n + 1} * tile);
              if (band_meets || own_flagged) expected_q.push_back(n);
              if (band_meets || flagged_rows(int64_t{n} * tile, int64_t{n + 1} * tile))
                expected_k.push_back(n);
            }
            EXPECT_EQ(visited_q, expected_q) << "query block at " << r0 << " of " << own << ", key tiles of "
                                             << tile << ", T " << T << ", window " << window;
            EXPECT_EQ(visited_k, expected_k) << "key block at " << r0 << " of " << own << ", query tiles of "
                                             << tile << ", T " << T << ", window " << window;
          }
    }
  }
}

struct BandCase {
  int64_t seq;
  int head_dim;
  DType dtype;
  float p;
  int64_t window;
  Padding batch0, batch1;
  bool f32_gradient;
};

void PrintTo(const BandCase& c, std::ostream* out) {
  *out << "T=" << c.seq << " d=" << c.head_dim << " " << loom::dtype_name(c.dtype) << " p=" << c.p
       << " window=" << c.window << " padding " << name_of(c.batch0) << "/" << name_of(c.batch1)
       << (c.f32_gradient ? " f32 d_ctx" : " 16-bit d_ctx");
}

/// The header's function in float64 on the values the kernels read ([B, T, H, d] activations):
/// ctx and lse, then, from d_ctx and the ctx the backward reads, δ and dq, dk, dv.
struct Reference {
  std::vector<double> ctx, lse, delta, dq, dk, dv;
};

Reference windowed_reference(int64_t B, int64_t H, int64_t T, int64_t d, float scale, float p, uint64_t seed,
                             uint64_t offset, int64_t window, const std::vector<float>& q,
                             const std::vector<float>& k, const std::vector<float>& v,
                             const std::vector<float>& mask, const std::vector<float>& d_ctx,
                             const std::vector<float>& ctx_read) {
  const size_t n = static_cast<size_t>(B * T * H * d);
  Reference out{std::vector<double>(n),
                std::vector<double>(static_cast<size_t>(B * H * T)),
                std::vector<double>(static_cast<size_t>(B * H * T)),
                std::vector<double>(n, 0.0),
                std::vector<double>(n, 0.0),
                std::vector<double>(n, 0.0)};
  const auto at = [&](int64_t b, int64_t t, int64_t h, int64_t c) {
    return static_cast<size_t>(((b * T + t) * H + h) * d + c);
  };
  const uint32_t threshold = loom::dropout_threshold(p);
  const double inv_keep = 1.0 / (1.0 - p);
  std::vector<double> prob(static_cast<size_t>(T)), kept(static_cast<size_t>(T));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t bh = b * H + h;
      for (int64_t i = 0; i < T; ++i) {
        bool uniform = true;
        double max_s = -INFINITY;
        std::vector<double> s(static_cast<size_t>(T), -INFINITY);
        for (int64_t j = 0; j < T; ++j) {
          if (!within_window(window, i, j) || mask[b * T + j] == loom::kMaskedKey) continue;
          double dot = 0;
          for (int64_t c = 0; c < d; ++c) dot += double{q[at(b, i, h, c)]} * k[at(b, j, h, c)];
          s[static_cast<size_t>(j)] = scale * dot + mask[b * T + j];
          max_s = std::max(max_s, s[static_cast<size_t>(j)]);
          uniform = false;
        }
        double l = 0;
        for (int64_t j = 0; j < T; ++j) l += uniform ? 1.0 : std::exp(s[static_cast<size_t>(j)] - max_s);
        const size_t r = static_cast<size_t>(bh * T + i);
        out.lse[r] = uniform ? double{loom::kMaskedKey} : max_s + std::log(l);
        for (int64_t j = 0; j < T; ++j) {
          prob[static_cast<size_t>(j)] =
              uniform ? 1.0 / static_cast<double>(T) : std::exp(s[static_cast<size_t>(j)] - max_s) / l;
          const bool keep =
              p == 0.0f ||
              loom::philox_word(seed, offset + static_cast<uint64_t>((bh * T + i) * T + j)) >= threshold;
          kept[static_cast<size_t>(j)] = keep ? inv_keep : 0.0;
        }
        double delta = 0;
        for (int64_t c = 0; c < d; ++c) {
          double sum = 0;
          for (int64_t j = 0; j < T; ++j)
            sum += prob[static_cast<size_t>(j)] * kept[static_cast<size_t>(j)] * v[at(b, j, h, c)];
          out.ctx[at(b, i, h, c)] = sum;
          delta += double{d_ctx[at(b, i, h, c)]} * ctx_read[at(b, i, h, c)];
        }
        out.delta[r] = delta;
        for (int64_t j = 0; j < T; ++j) {
          const double pj = prob[static_cast<size_t>(j)], zj = kept[static_cast<size_t>(j)];
          if (pj == 0.0) continue;
          double dp = 0;
          for (int64_t c = 0; c < d; ++c) dp += double{d_ctx[at(b, i, h, c)]} * v[at(b, j, h, c)];
          const double ds = pj * (zj * dp - delta);
          for (int64_t c = 0; c < d; ++c) {
            out.dv[at(b, j, h, c)] += pj * zj * d_ctx[at(b, i, h, c)];
            out.dk[at(b, j, h, c)] += scale * ds * q[at(b, i, h, c)];
            out.dq[at(b, i, h, c)] += scale * ds * k[at(b, j, h, c)];
          }
        }
      }
    }
  return out;
}

std::vector<float> as_floats(const std::vector<double>& v) {
  return std::vector<float>(v.begin(), v.end());
}

class WindowedAttentionEmulated : public ::testing::TestWithParam<BandCase> {};

/// The kernels' outputs of one call.
struct Outputs {
  std::vector<float> ctx_bits_as_float, lse, dq, dk, dv;  // ctx widened from its 16-bit values
};

template <typename S, int kD>
void check(const BandCase& cs) {
  const int64_t B = 2, H = 2, T = cs.seq, d = kD, BH = B * H;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  const uint64_t seed = 0x5eedull, offset = 777;
  const size_t n = static_cast<size_t>(B * T * H * d);
  const std::vector<S> q = rounded<S>(random_floats(n, 11, -2.0f, 2.0f)),
                       k = rounded<S>(random_floats(n, 12, -2.0f, 2.0f)),
                       v = rounded<S>(random_floats(n, 13, -1.0f, 1.0f));
  std::vector<float> d_ctx = random_floats(n, 14, -1.0f, 1.0f);
  const std::vector<S> d_ctx16 = rounded<S>(d_ctx);
  if (!cs.f32_gradient) d_ctx = widened(d_ctx16);
  std::vector<float> mask(static_cast<size_t>(B * T));
  pad(mask, 0, T, cs.batch0);
  pad(mask, 1, T, cs.batch1);
  const std::vector<float> qf = widened(q), kf = widened(k), vf = widened(v);

  // The reference forward, then the ctx the backward reads: the reference's, rounded to S.
  const Reference forward = windowed_reference(B, H, T, d, scale, cs.p, seed, offset, cs.window, qf, kf, vf,
                                               mask, d_ctx, std::vector<float>(n, 0.0f));
  std::vector<float> ctx_exact(n);
  for (size_t e = 0; e < n; ++e) ctx_exact[e] = static_cast<float>(forward.ctx[e]);
  const std::vector<S> ctx_read = rounded<S>(ctx_exact);
  const std::vector<float> ctx_read_f = widened(ctx_read);
  const Reference ref = windowed_reference(B, H, T, d, scale, cs.p, seed, offset, cs.window, qf, kf, vf, mask,
                                           d_ctx, ctx_read_f);
  const std::vector<float> lse_ref = as_floats(ref.lse), delta = as_floats(ref.delta);

  const auto rows_of = [&](auto* data) {
    using T_ = std::remove_pointer_t<decltype(data)>;
    return HeadRows<T_>{data, T * H * d, d, H * d};
  };
  const int64_t blocks = (T + 63) / 64;
  // The kernels as backend/cuda runs them: the flags first (a band, a key mask), then the three.
  const auto run = [&](int64_t window) {
    const AttentionShape shape{
        B,    H,      T,     d, scale, cs.p > 0.0f, loom::dropout_threshold(cs.p), 1.0f / (1.0f - cs.p),
        seed, offset, window};
    const std::vector<uint8_t> flags =
        window >= 0 ? emulated_flags(mask, B, T, window) : std::vector<uint8_t>{};
    if (window >= 0) {
      EXPECT_EQ(flags, expected_flags(mask, B, T, window));
    }
    const uint8_t* empty_bands = window >= 0 ? flags.data() : nullptr;
    std::vector<S> ctx(n);
    Outputs out{{},
                std::vector<float>(static_cast<size_t>(BH * T), NAN),
                std::vector<float>(n, NAN),
                std::vector<float>(n, NAN),
                std::vector<float>(n, NAN)};
    const ForwardArgs<S> fa{rows_of(q.data()), rows_of(k.data()), rows_of(v.data()), rows_of(ctx.data()),
                            out.lse.data(),    mask.data(),       empty_bands,       shape};
    run_grid<Forward<S, kD>>(fa, blocks, BH);
    out.ctx_bits_as_float = widened(ctx);
    const auto backward = [&](const auto& g_rows) {
      using G = std::remove_cv_t<std::remove_pointer_t<decltype(g_rows.data)>>;
      const BackwardArgs<S, G> ba{rows_of(q.data()),
                                  rows_of(k.data()),
                                  rows_of(v.data()),
                                  g_rows,
                                  lse_ref.data(),
                                  delta.data(),
                                  mask.data(),
                                  empty_bands,
                                  rows_of(out.dq.data()),
                                  rows_of(out.dk.data()),
                                  rows_of(out.dv.data()),
                                  shape};
      run_grid<KeyGrads<S, G, kD>>(ba, blocks, BH);
      run_grid<QueryGrads<S, G, kD>>(ba, blocks, BH);
    };
    if (cs.f32_gradient)
      backward(rows_of(static_cast<const float*>(d_ctx.data())));
    else
      backward(rows_of(d_ctx16.data()));
    return out;
  };
  const Outputs got = run(cs.window);

  const flash_test::AttentionBounds bound = flash_test::attention_error_bounds(
      {B, H, T, d, scale, cs.p, seed, offset, qf.data(), kf.data(), vf.data(), d_ctx.data(),
       ctx_read_f.data(), mask.data(), std::is_same_v<S, loom::BFloat16> ? 0x1p-8 : 0x1p-11, cs.f32_gradient,
       cs.window});
  flash_test::expect_within(got.ctx_bits_as_float, ctx_read_f, bound.ctx, "ctx");
  flash_test::expect_within(got.lse, lse_ref, bound.lse, "lse");
  flash_test::expect_within(got.dv, as_floats(ref.dv), bound.dv, "dv");
  flash_test::expect_within(got.dk, as_floats(ref.dk), bound.dk, "dk");
  flash_test::expect_within(got.dq, as_floats(ref.dq), bound.dq, "dq");

  // A band that holds every key is FusedAttention: the kernels give the same bits without one.
  if (cs.window >= T - 1) {
    const Outputs full = run(-1);
    const auto same_bits = [](const std::vector<float>& a, const std::vector<float>& b) {
      return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
    };
    EXPECT_TRUE(same_bits(got.ctx_bits_as_float, full.ctx_bits_as_float)) << "ctx";
    EXPECT_TRUE(same_bits(got.lse, full.lse)) << "lse";
    EXPECT_TRUE(same_bits(got.dq, full.dq)) << "dq";
    EXPECT_TRUE(same_bits(got.dk, full.dk)) << "dk";
    EXPECT_TRUE(same_bits(got.dv, full.dv)) << "dv";
  }
}

TEST_P(WindowedAttentionEmulated, MatchesTheFloat64BandWithinDerivedBounds) {
  const BandCase cs = GetParam();
  if (cs.dtype == DType::bf16)
    cs.head_dim == 64 ? check<loom::BFloat16, 64>(cs) : check<loom::BFloat16, 128>(cs);
  else
    cs.head_dim == 64 ? check<loom::Half, 64>(cs) : check<loom::Half, 128>(cs);
}

using P = Padding;
INSTANTIATE_TEST_SUITE_P(Bands, WindowedAttentionEmulated,
                         ::testing::Values(BandCase{1, 64, DType::bf16, 0.0f, 0, P::none, P::none, true},
                                           BandCase{77, 64, DType::bf16, 0.1f, 0, P::right, P::all, true},
                                           BandCase{77, 64, DType::f16, 0.0f, 1, P::right, P::left, false},
                                           BandCase{130, 64, DType::bf16, 0.1f, 3, P::right, P::none, false},
                                           BandCase{200, 64, DType::f16, 0.1f, 40, P::right, P::left, true},
                                           BandCase{300, 64, DType::bf16, 0.0f, 5, P::right, P::left, true},
                                           BandCase{200, 64, DType::bf16, 0.1f, 200, P::right, P::all, true},
                                           BandCase{77, 128, DType::bf16, 0.1f, 1, P::right, P::none, false},
                                           BandCase{130, 128, DType::f16, 0.1f, 3, P::right, P::left, true},
                                           BandCase{200, 128, DType::bf16, 0.0f, 70, P::right, P::all, true},
                                           BandCase{130, 128, DType::bf16, 0.0f, 129, P::none, P::right,
                                                    false},
                                           BandCase{37, 128, DType::f16, 0.1f, 36, P::right, P::left, true}));

}  // namespace
}  // namespace loom_cuda::flash
