// The Tensor-Core attention kernels (flash_attention_forward.cuh, flash_attention_backward.cuh)
// run on the CPU, lane by lane (lane_emulator), against backend/cpu's fused attention on the same
// 16-bit inputs: per-head views of a [B·T, H·d] activation, T with tails (1, 37, 64, 77, 130, 200),
// a padding mask and a batch whose keys are all masked, dropout on and off, bf16 and f16, d = 64
// and 128, an f32 incoming gradient (as the encoder layer passes it) and a 16-bit one.
//
// Bounds per element: attention_error_bounds.hpp. The backward's δ pass (flash_attention_delta.cuh)
// against backend/cpu's δ within the error of two f32 sums of d products.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "attention_error_bounds.hpp"
#include "backend_ops/references.hpp"
#include "cpu_backend.hpp"
#include "emulated_grid.hpp"
#include "flash_attention_backward.cuh"
#include "flash_attention_delta.cuh"
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
       << (c.batch1_all_masked ? " batch 1 all masked" : "")
       << (c.f32_gradient ? " f32 d_ctx" : " 16-bit d_ctx");
}

using emulation::rounded;
using emulation::run_grid;
using emulation::widened;
using loom_backend_ops::random_floats;  // the backend-ops harness's seeded data

class FlashAttentionEmulated : public ::testing::TestWithParam<Case> {};

template <typename S, int kD>
void check(const Case& cs) {
  const int64_t B = 2, H = 2, T = cs.seq, d = kD, BH = B * H;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  const uint64_t seed = 0x5eedull, offset = 777;

  // [B, T, H, d] activations (the encoder's [B·T, H·d]); the kernels see per-head views.
  const size_t n = static_cast<size_t>(B * T * H * d);
  std::vector<S> q = rounded<S>(random_floats(n, 1, -2.0f, 2.0f)),
                 k = rounded<S>(random_floats(n, 2, -2.0f, 2.0f)),
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
  cpu.attention_backward(
      cs.f32_gradient ? heads(d_ctx.data(), DType::f32) : heads(d_ctx16.data(), storage),
      heads(q.data(), storage), heads(k.data(), storage), heads(v.data(), storage),
      heads(ctx_ref.data(), storage), loom::Tensor::contiguous(lse_ref.data(), DType::f32, {B, H, T}), mask_t,
      scale, cs.p, seed, offset, heads(dq_ref.data(), DType::f32), heads(dk_ref.data(), DType::f32),
      heads(dv_ref.data(), DType::f32), loom::Tensor::contiguous(delta.data(), DType::f32, {B, H, T}));

  // The kernels, lane by lane.
  const AttentionShape shape{
      B, H, T, d, scale, cs.p > 0.0f, loom::dropout_threshold(cs.p), 1.0f / (1.0f - cs.p), seed, offset};
  const auto rows_of = [&](auto* data) {
    using T_ = std::remove_pointer_t<decltype(data)>;
    return HeadRows<T_>{data, T * H * d, d, H * d};
  };
  std::vector<S> ctx(n);
  std::vector<float> lse(static_cast<size_t>(BH * T)), dq(n, NAN), dk(n, NAN), dv(n, NAN);
  const ForwardArgs<S> fa{rows_of(static_cast<const S*>(q.data())),
                          rows_of(static_cast<const S*>(k.data())),
                          rows_of(static_cast<const S*>(v.data())),
                          rows_of(ctx.data()),
                          lse.data(),
                          mask.data(),
                          nullptr,
                          shape};
  const int64_t blocks = (T + 63) / 64;
  run_grid<Forward<S, kD>>(fa, blocks, BH);
  const auto backward = [&](const auto& g_rows) {
    using G = std::remove_cv_t<std::remove_pointer_t<decltype(g_rows.data)>>;
    // δ: every row written (NaN before), each within 2·d·2⁻²⁴·Σ|d_ctx·ctx| of backend/cpu's.
    std::vector<float> row_deltas(static_cast<size_t>(BH * T), NAN);
    run_grid<RowDeltas<S, G, kD>>(DeltaArgs<S, G>{g_rows, rows_of(static_cast<const S*>(ctx_ref.data())),
                                                  row_deltas.data(), shape},
                                  blocks, BH);
    const std::vector<float> g_used = cs.f32_gradient ? d_ctx : widened(d_ctx16), c_used = widened(ctx_ref);
    for (int64_t bh = 0; bh < BH; ++bh)
      for (int64_t i = 0; i < T; ++i) {
        const int64_t b = bh / H, h = bh % H, at = ((b * T + i) * H + h) * d;
        double magnitude = 0.0;
        for (int64_t c = 0; c < d; ++c) magnitude += std::fabs(double{g_used[at + c]} * c_used[at + c]);
        const size_t r = static_cast<size_t>(bh * T + i);
        ASSERT_LE(std::fabs(double{row_deltas[r]} - delta[r]), 2.0 * d * 0x1p-24 * magnitude)
            << "delta of head " << bh << " row " << i << ": " << row_deltas[r] << " against " << delta[r];
      }
    const BackwardArgs<S, G> ba{rows_of(static_cast<const S*>(q.data())),
                                rows_of(static_cast<const S*>(k.data())),
                                rows_of(static_cast<const S*>(v.data())),
                                g_rows,
                                lse_ref.data(),
                                delta.data(),
                                mask.data(),
                                nullptr,
                                rows_of(dq.data()),
                                rows_of(dk.data()),
                                rows_of(dv.data()),
                                shape};
    run_grid<KeyGrads<S, G, kD>>(ba, blocks, BH);
    run_grid<QueryGrads<S, G, kD>>(ba, blocks, BH);
  };
  if (cs.f32_gradient)
    backward(rows_of(static_cast<const float*>(d_ctx.data())));
  else
    backward(rows_of(static_cast<const S*>(d_ctx16.data())));

  const std::vector<float> qf = widened(q), kf = widened(k), vf = widened(v), ctxf = widened(ctx_ref);
  const std::vector<float> gf = cs.f32_gradient ? d_ctx : widened(d_ctx16);
  const flash_test::AttentionBounds bound = flash_test::attention_error_bounds(
      {B, H, T, d, scale, cs.p, seed, offset, qf.data(), kf.data(), vf.data(), gf.data(), ctxf.data(),
       mask.data(), std::is_same_v<S, loom::BFloat16> ? 0x1p-8 : 0x1p-11, cs.f32_gradient});
  const auto& ctx_bound = bound.ctx;
  const auto& lse_bound = bound.lse;
  const auto& dq_bound = bound.dq;
  const auto& dk_bound = bound.dk;
  const auto& dv_bound = bound.dv;

  flash_test::expect_within(widened(ctx), ctxf, ctx_bound, "ctx");
  flash_test::expect_within(lse, lse_ref, lse_bound, "lse");
  flash_test::expect_within(dv, dv_ref, dv_bound, "dv");
  flash_test::expect_within(dk, dk_ref, dk_bound, "dk");
  flash_test::expect_within(dq, dq_ref, dq_bound, "dq");
}

TEST_P(FlashAttentionEmulated, MatchesBackendCpuWithinDerivedBounds) {
  const Case cs = GetParam();
  if (cs.dtype == DType::bf16)
    cs.head_dim == 64 ? check<loom::BFloat16, 64>(cs) : check<loom::BFloat16, 128>(cs);
  else
    cs.head_dim == 64 ? check<loom::Half, 64>(cs) : check<loom::Half, 128>(cs);
}

INSTANTIATE_TEST_SUITE_P(Shapes, FlashAttentionEmulated,
                         ::testing::Values(Case{1, 64, DType::bf16, 0.0f, false, true},
                                           Case{37, 64, DType::bf16, 0.1f, true, true},
                                           Case{64, 64, DType::f16, 0.0f, false, false},
                                           Case{77, 64, DType::bf16, 0.1f, false, false},
                                           Case{130, 64, DType::f16, 0.1f, true, true},
                                           Case{37, 128, DType::bf16, 0.0f, true, true},
                                           Case{77, 128, DType::f16, 0.1f, false, true},
                                           Case{77, 128, DType::bf16, 0.1f, false, false},
                                           Case{200, 128, DType::bf16, 0.1f, true, true}));

}  // namespace
}  // namespace loom_cuda::flash
