// Fused attention (loom::FusedAttention) against the unfused composition on backend/cpu — gemm, softmax,
// dropout and their backwards, which define the same function with the same dropout bits — and
// against backend/cpu's own reference attention_forward/backward, for
// T ∈ {1, 37, 128, 512}, d = 64, padding masks (and a batch whose keys are all masked), dropout,
// f32/bf16/f16 inputs, and per-head views into a [B·T, H·d] activation. At production sizes — B·H =
// 4,096 (B = 256, H = 16, T = 128, d = 64) with dropout, B·H = 256 at T = 512 without, and d = 128
// at T = 512 — against backend/cpu's fused op alone, bf16 with padding, within derived bounds.
#include <cmath>
#include <tuple>

#include "attention_error_bounds.hpp"
#include "cuda_test_support.hpp"

namespace loom_cuda_test {
namespace {

using loom::DType;

struct AttentionCase {
  int64_t seq;
  DType dtype;
  float p;
  bool mask_all_of_batch1;
};

/// Readable parameter names in test output (the struct has padding gtest would print as bytes).
void PrintTo(const AttentionCase& c, std::ostream* out) {
  *out << "T=" << c.seq << " " << loom::dtype_name(c.dtype) << " p=" << c.p
       << (c.mask_all_of_batch1 ? " batch 1 all masked" : "");
}

class AttentionTest : public CudaOpTest, public ::testing::WithParamInterface<AttentionCase> {};

/// A contiguous [B, H, T, d] f32 copy of the [B, T, H, d] host data (the CPU reference's layout).
HostTensor heads_first(loom_cpu::CpuBackend& cpu, HostTensor& bthd) {
  const auto& s = bthd.shape;
  HostTensor as_f32 = HostTensor::of(bthd.floats(), DType::f32, s);
  HostTensor out = HostTensor::zeros(DType::f32, {s[0], s[2], s[1], s[3]});
  cpu.copy(as_f32.view().permute({0, 2, 1, 3}), out.view());
  return out;
}

TEST_P(AttentionTest, ForwardAndBackwardMatchTheUnfusedCpuOps) {
  const AttentionCase cs = GetParam();
  const int64_t B = 2, H = 2, T = cs.seq, d = 64;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  const uint64_t seed = 0xfeedbeefull, offset = 12345;
  const std::string what =
      "T=" + std::to_string(T) + " " + loom::dtype_name(cs.dtype) + " p=" + std::to_string(cs.p);

  // Inputs in the encoder's layout [B, T, H, d] (= [B·T, H·d]); the GPU sees per-head views.
  HostTensor q = HostTensor::of(random_floats(B * T * H * d, 1, -2.0f, 2.0f), cs.dtype, {B, T, H, d});
  HostTensor k = HostTensor::of(random_floats(B * T * H * d, 2, -2.0f, 2.0f), cs.dtype, {B, T, H, d});
  HostTensor v = HostTensor::of(random_floats(B * T * H * d, 3), cs.dtype, {B, T, H, d});
  std::vector<float> mask(B * T, 0.0f);
  for (int64_t t = 0; t < T; ++t) {
    if (T > 1 && t >= (2 * T + 2) / 3) mask[t] = loom::kMaskedKey;  // batch 0: padding at the end
    if (cs.mask_all_of_batch1) mask[T + t] = loom::kMaskedKey;
  }
  HostTensor key_mask = HostTensor::of(mask, DType::f32, {B, T});

  // ---- reference: unfused CPU ops on [B, H, T, d] f32 ----
  HostTensor q_r = heads_first(cpu, q), k_r = heads_first(cpu, k), v_r = heads_first(cpu, v);
  HostTensor scores = HostTensor::zeros(DType::f32, {B, H, T, T}), probs = scores, dropped = scores;
  cpu.gemm(q_r.view(), false, k_r.view(), true, scores.view(), 1.0f, 0.0f);
  cpu.softmax_forward(scores.view(), key_mask.view(), scale, probs.view());
  cpu.dropout_forward(probs.view(), dropped.view(), cs.p, seed, offset);
  HostTensor ctx_r = HostTensor::zeros(DType::f32, {B, H, T, d});
  cpu.gemm(dropped.view(), false, v_r.view(), false, ctx_r.view(), 1.0f, 0.0f);
  std::vector<float> lse_r(B * H * T);
  for (int64_t row = 0; row < B * H * T; ++row) {
    const int64_t b = row / (H * T);
    double max = -INFINITY;
    for (int64_t j = 0; j < T; ++j)
      max = std::max(max, double(scale * scores.get(row * T + j) + mask[b * T + j]));
    double sum = 0;
    for (int64_t j = 0; j < T; ++j)
      sum += std::exp(double(scale * scores.get(row * T + j) + mask[b * T + j]) - max);
    lse_r[row] = static_cast<float>(max + std::log(sum));
  }

  // ---- fused on the GPU ----
  DeviceTensor q_g = upload(q), k_g = upload(k), v_g = upload(v), mask_g = upload(key_mask);
  DeviceTensor ctx_g = upload(HostTensor::zeros(cs.dtype, {B, T, H, d}));
  DeviceTensor lse_g = upload(HostTensor::zeros(DType::f32, {B, H, T}));
  const auto heads = [](const DeviceTensor& t) { return t.view().permute({0, 2, 1, 3}); };
  gpu->attention_forward(heads(q_g), heads(k_g), heads(v_g), mask_g.view(), scale, cs.p, seed, offset,
                         heads(ctx_g), lse_g.view());
  HostTensor ctx_back = ctx_g.download(*gpu);
  HostTensor ctx_heads = heads_first(cpu, ctx_back);
  const double tol = cs.dtype == DType::f32 ? 2e-5 : cs.dtype == DType::f16 ? 3e-3 : 2e-2;
  expect_close(ctx_heads.floats(), ctx_r.floats(), tol, tol, what + " ctx");
  expect_close(lse_g.download(*gpu).floats(), lse_r, 1e-5, 1e-4, what + " lse");

  // ---- backward ----
  HostTensor d_ctx = HostTensor::of(random_floats(B * T * H * d, 4), DType::f32, {B, T, H, d});
  HostTensor d_ctx_r = heads_first(cpu, d_ctx);
  HostTensor d_dropped = HostTensor::zeros(DType::f32, {B, H, T, T}), d_probs = d_dropped,
             d_scores = d_dropped;
  HostTensor dq_r = HostTensor::zeros(DType::f32, {B, H, T, d}), dk_r = dq_r, dv_r = dq_r;
  cpu.gemm(d_ctx_r.view(), false, v_r.view(), true, d_dropped.view(), 1.0f, 0.0f);
  cpu.gemm(dropped.view(), true, d_ctx_r.view(), false, dv_r.view(), 1.0f, 0.0f);
  cpu.dropout_backward(d_dropped.view(), d_probs.view(), cs.p, seed, offset);
  cpu.softmax_backward(d_probs.view(), probs.view(), scale, d_scores.view());
  cpu.gemm(d_scores.view(), false, k_r.view(), false, dq_r.view(), 1.0f, 0.0f);
  cpu.gemm(d_scores.view(), true, q_r.view(), false, dk_r.view(), 1.0f, 0.0f);

  DeviceTensor d_ctx_g = upload(d_ctx);
  DeviceTensor dq_g = upload(HostTensor::zeros(DType::f32, {B, T, H, d})), dk_g = upload(dq_g.download(*gpu)),
               dv_g = upload(dq_g.download(*gpu));
  DeviceTensor delta_g = upload(HostTensor::zeros(DType::f32, {B, H, T}));
  // The backward sees ctx exactly as the forward wrote it.
  gpu->attention_backward(heads(d_ctx_g), heads(q_g), heads(k_g), heads(v_g), heads(ctx_g), lse_g.view(),
                          mask_g.view(), scale, cs.p, seed, offset, heads(dq_g), heads(dk_g), heads(dv_g),
                          delta_g.view());
  // With 16-bit inputs ctx is rounded before δ = Σ d_ctx·ctx, so the gradients carry that rounding.
  const double gtol = cs.dtype == DType::f32 ? 1e-4 : cs.dtype == DType::f16 ? 5e-3 : 3e-2;
  for (auto [name, device, reference] :
       {std::tuple{"dq", &dq_g, &dq_r}, std::tuple{"dk", &dk_g, &dk_r}, std::tuple{"dv", &dv_g, &dv_r}}) {
    HostTensor back = device->download(*gpu);
    expect_close(heads_first(cpu, back).floats(), reference->floats(), gtol, gtol, what + " " + name);
  }

  // backend/cpu's own fused op (its reference implementation of FusedAttention) agrees as well.
  HostTensor ctx_cpu = HostTensor::zeros(DType::f32, {B, H, T, d}),
             lse_cpu = HostTensor::zeros(DType::f32, {B, H, T});
  cpu.attention_forward(q_r.view(), k_r.view(), v_r.view(), key_mask.view(), scale, cs.p, seed, offset,
                        ctx_cpu.view(), lse_cpu.view());
  expect_close(ctx_heads.floats(), ctx_cpu.floats(), tol, tol,
               what + " ctx vs CpuBackend::attention_forward");
  HostTensor dq_cpu = HostTensor::zeros(DType::f32, {B, H, T, d}), dk_cpu = dq_cpu, dv_cpu = dq_cpu;
  HostTensor delta_cpu = HostTensor::zeros(DType::f32, {B, H, T});
  cpu.attention_backward(d_ctx_r.view(), q_r.view(), k_r.view(), v_r.view(), ctx_cpu.view(), lse_cpu.view(),
                         key_mask.view(), scale, cs.p, seed, offset, dq_cpu.view(), dk_cpu.view(),
                         dv_cpu.view(), delta_cpu.view());
  HostTensor dq_back = dq_g.download(*gpu);
  expect_close(heads_first(cpu, dq_back).floats(), dq_cpu.floats(), gtol, gtol,
               what + " dq vs CpuBackend::attention_backward");

  // Deterministic: a second backward gives the same bits.
  const std::vector<float> dk_first = dk_g.download(*gpu).floats();
  gpu->attention_backward(heads(d_ctx_g), heads(q_g), heads(k_g), heads(v_g), heads(ctx_g), lse_g.view(),
                          mask_g.view(), scale, cs.p, seed, offset, heads(dq_g), heads(dk_g), heads(dv_g),
                          delta_g.view());
  expect_equal(dk_g.download(*gpu).floats(), dk_first, what + " dk rerun");
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, AttentionTest,
    ::testing::Values(AttentionCase{1, DType::f32, 0.0f, false}, AttentionCase{37, DType::f32, 0.0f, true},
                      AttentionCase{37, DType::f32, 0.1f, false}, AttentionCase{128, DType::f32, 0.1f, false},
                      AttentionCase{512, DType::f32, 0.1f, false},
                      AttentionCase{128, DType::bf16, 0.1f, false}, AttentionCase{37, DType::f16, 0.0f, true},
                      AttentionCase{512, DType::bf16, 0.0f, false}),
    [](const ::testing::TestParamInfo<AttentionCase>& info) {
      std::string name = "T";
      name += std::to_string(info.param.seq);
      name += "_";
      name += loom::dtype_name(info.param.dtype);
      if (info.param.p > 0) name += "_dropout";
      if (info.param.mask_all_of_batch1) name += "_all_masked";
      return name;
    });

// ---- the two kernel families ----------------------------------------------------------------------
//
// bf16 storage runs the Tensor-Core kernels; with `tensor_core_attention = false` the same call runs
// the CUDA-core kernels (f32 probabilities, as backend/cpu). Both within the derived bounds of
// the first's rounding (emulated/attention_error_bounds.hpp) around the second, on one odd shape
// with dropout and padding, f32 d_ctx as the encoder layer passes it.
TEST_F(CudaOpTest, AttentionTensorCoreKernelsAgreeWithTheCudaCoreKernels) {
  const int64_t B = 3, H = 2, T = 77, d = 64;
  const float scale = 0.125f, p = 0.1f;
  const uint64_t seed = 99, offset = 5;
  HostTensor q = HostTensor::of(random_floats(B * T * H * d, 41, -2.0f, 2.0f), DType::bf16, {B, T, H, d});
  HostTensor k = HostTensor::of(random_floats(B * T * H * d, 42, -2.0f, 2.0f), DType::bf16, {B, T, H, d});
  HostTensor v = HostTensor::of(random_floats(B * T * H * d, 43), DType::bf16, {B, T, H, d});
  HostTensor d_ctx = HostTensor::of(random_floats(B * T * H * d, 44), DType::f32, {B, T, H, d});
  std::vector<float> mask(B * T, 0.0f);
  for (int64_t t = 50; t < T; ++t) mask[t] = loom::kMaskedKey;
  for (int64_t t = 0; t < T; ++t) mask[2 * T + t] = loom::kMaskedKey;  // batch 2: every key masked
  HostTensor key_mask = HostTensor::of(mask, DType::f32, {B, T});
  DeviceTensor q_g = upload(q), k_g = upload(k), v_g = upload(v), d_ctx_g = upload(d_ctx),
               mask_g = upload(key_mask);
  const auto heads = [](const DeviceTensor& t) { return t.view().permute({0, 2, 1, 3}); };

  const auto forward = [&](bool tensor_cores, DeviceTensor& ctx_g, DeviceTensor& lse_g) {
    gpu->set_tensor_core_attention(tensor_cores);
    gpu->attention_forward(heads(q_g), heads(k_g), heads(v_g), mask_g.view(), scale, p, seed, offset,
                           heads(ctx_g), lse_g.view());
  };
  DeviceTensor ctx_c = upload(HostTensor::zeros(DType::bf16, {B, T, H, d})),
               ctx_t = upload(ctx_c.download(*gpu));
  DeviceTensor lse_c = upload(HostTensor::zeros(DType::f32, {B, H, T})), lse_t = upload(lse_c.download(*gpu));
  forward(false, ctx_c, lse_c);
  forward(true, ctx_t, lse_t);
  // Both backwards read the CUDA-core forward's ctx and lse, so they compute one function.
  const auto backward = [&](bool tensor_cores) {
    gpu->set_tensor_core_attention(tensor_cores);
    DeviceTensor dq_g = upload(HostTensor::zeros(DType::f32, {B, T, H, d})),
                 dk_g = upload(dq_g.download(*gpu)), dv_g = upload(dq_g.download(*gpu)),
                 delta_g = upload(HostTensor::zeros(DType::f32, {B, H, T}));
    gpu->attention_backward(heads(d_ctx_g), heads(q_g), heads(k_g), heads(v_g), heads(ctx_c), lse_c.view(),
                            mask_g.view(), scale, p, seed, offset, heads(dq_g), heads(dk_g), heads(dv_g),
                            delta_g.view());
    return std::vector<std::vector<float>>{dq_g.download(*gpu).floats(), dk_g.download(*gpu).floats(),
                                           dv_g.download(*gpu).floats()};
  };
  const auto cuda_cores = backward(false), tensor_cores = backward(true);
  gpu->set_tensor_core_attention(true);

  const std::vector<float> q_f = q.floats(), k_f = k.floats(), v_f = v.floats(), d_ctx_f = d_ctx.floats(),
                           ctx_f = ctx_c.download(*gpu).floats();
  const loom_cuda::flash_test::AttentionBounds bound = loom_cuda::flash_test::attention_error_bounds(
      {B, H, T, d, scale, p, seed, offset, q_f.data(), k_f.data(), v_f.data(), d_ctx_f.data(), ctx_f.data(),
       mask.data(), std::ldexp(1.0, -8), true});
  loom_cuda::flash_test::expect_within(ctx_t.download(*gpu).floats(), ctx_f, bound.ctx, "ctx");
  loom_cuda::flash_test::expect_within(lse_t.download(*gpu).floats(), lse_c.download(*gpu).floats(),
                                       bound.lse, "lse");
  loom_cuda::flash_test::expect_within(tensor_cores[0], cuda_cores[0], bound.dq, "dq");
  loom_cuda::flash_test::expect_within(tensor_cores[1], cuda_cores[1], bound.dk, "dk");
  loom_cuda::flash_test::expect_within(tensor_cores[2], cuda_cores[2], bound.dv, "dv");
}

// ---- production sizes ----------------------------------------------------------------------------
//
// The reference is backend/cpu's fused op on the same bf16 inputs, not the unfused composition:
// it rounds ctx to bf16 once, as the GPU does, and the backward reads that rounded ctx for
// δ = Σ d_ctx·ctx, as the GPU's does. Against the unfused f32 path that rounding alone moves dk by
// up to 0.033 at B·H = 4,096 (in a batch of one key), which would leave the gradients no tight
// bound. backend/cpu checks its fused op against the unfused ops and for thread-count independence
// (plugins/backend-cpu/tests/attention_test.cpp), so it runs here on every core: on one it takes
// ~23 s at B·H = 4,096 (the plain loops of a reference implementation).
//
// Tolerances, and why:
// - ctx, lse, dq, dk, dv: 16-bit storage runs the Tensor-Core kernels, which round P̃, dS and the
//   f32 d_ctx to bf16 for their mma (as FlashAttention does): per-element bounds derived from a
//   float64 recomputation of the same function (emulated/attention_error_bounds.hpp; the CPU-driven
//   kernel tests use the same bounds and print how much of them the worst element uses, 0.4–0.6).
//   Both backwards read the same bf16 q, k, v, f32 d_ctx and the GPU's own ctx and lse.
// - δ: the same f32 function on both sides in different summation orders (two CPU implementations
//   that differ only so are at most 4e-6 apart at these sizes): rtol = atol = 1e-4. A wrong dropout
//   bit, mask or head moves an element by ~0.1.

struct ProductionShape {
  int64_t batch, heads, seq, head_dim;
  float p;
};

void PrintTo(const ProductionShape& s, std::ostream* out) {
  *out << "B=" << s.batch << " H=" << s.heads << " T=" << s.seq << " d=" << s.head_dim << " p=" << s.p;
}

class AttentionAtProductionSizeTest : public CudaOpTest,
                                      public ::testing::WithParamInterface<ProductionShape> {
 protected:
  loom_cpu::CpuBackend every_core{0};  // results do not depend on the thread count
};

TEST_P(AttentionAtProductionSizeTest, BF16WithPaddingMatchesTheCpuFusedOpWithinDerivedBounds) {
  const auto [B, H, T, d, p] = GetParam();
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  const uint64_t seed = 0x5eedfaceull, offset = 777;
  const std::string what = "B=" + std::to_string(B) + " H=" + std::to_string(H) + " T=" + std::to_string(T) +
                           " d=" + std::to_string(d);

  // [B, T, H, d] activations seen as per-head views [B, H, T, d] on both sides.
  HostTensor q = HostTensor::of(random_floats(B * T * H * d, 31, -2.0f, 2.0f), DType::bf16, {B, T, H, d});
  HostTensor k = HostTensor::of(random_floats(B * T * H * d, 32, -2.0f, 2.0f), DType::bf16, {B, T, H, d});
  HostTensor v = HostTensor::of(random_floats(B * T * H * d, 33), DType::bf16, {B, T, H, d});
  HostTensor d_ctx = HostTensor::of(random_floats(B * T * H * d, 34), DType::f32, {B, T, H, d});
  // Batch b keeps its first T − (37·b + 5) mod T keys: every length from 1 to T when B ≥ T.
  std::vector<float> mask(B * T, 0.0f);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = T - (37 * b + 5) % T; t < T; ++t) mask[b * T + t] = loom::kMaskedKey;
  HostTensor key_mask = HostTensor::of(mask, DType::f32, {B, T});
  const auto heads = [](auto& t) { return t.view().permute({0, 2, 1, 3}); };

  DeviceTensor q_g = upload(q), k_g = upload(k), v_g = upload(v), d_ctx_g = upload(d_ctx),
               mask_g = upload(key_mask);
  DeviceTensor ctx_g = upload(HostTensor::zeros(DType::bf16, {B, T, H, d}));
  DeviceTensor lse_g = upload(HostTensor::zeros(DType::f32, {B, H, T}));
  gpu->attention_forward(heads(q_g), heads(k_g), heads(v_g), mask_g.view(), scale, p, seed, offset,
                         heads(ctx_g), lse_g.view());
  HostTensor ctx_c = HostTensor::zeros(DType::bf16, {B, T, H, d}),
             lse_c = HostTensor::zeros(DType::f32, {B, H, T});
  every_core.attention_forward(heads(q), heads(k), heads(v), key_mask.view(), scale, p, seed, offset,
                               heads(ctx_c), lse_c.view());
  HostTensor ctx_back = ctx_g.download(*gpu), lse_back = lse_g.download(*gpu);
  const std::vector<float> q_f = q.floats(), k_f = k.floats(), v_f = v.floats(), d_ctx_f = d_ctx.floats(),
                           ctx_f = ctx_back.floats();
  const loom_cuda::flash_test::AttentionBounds bound = loom_cuda::flash_test::attention_error_bounds(
      {B, H, T, d, scale, p, seed, offset, q_f.data(), k_f.data(), v_f.data(), d_ctx_f.data(), ctx_f.data(),
       mask.data(), std::ldexp(1.0, -8), true});
  loom_cuda::flash_test::expect_within(ctx_f, ctx_c.floats(), bound.ctx, what + " ctx");
  loom_cuda::flash_test::expect_within(lse_back.floats(), lse_c.floats(), bound.lse, what + " lse");

  const auto zeros = [&] { return HostTensor::zeros(DType::f32, {B, T, H, d}); };
  DeviceTensor dq_g = upload(zeros()), dk_g = upload(zeros()), dv_g = upload(zeros());
  DeviceTensor delta_g = upload(HostTensor::zeros(DType::f32, {B, H, T}));
  gpu->attention_backward(heads(d_ctx_g), heads(q_g), heads(k_g), heads(v_g), heads(ctx_g), lse_g.view(),
                          mask_g.view(), scale, p, seed, offset, heads(dq_g), heads(dk_g), heads(dv_g),
                          delta_g.view());
  HostTensor dq_c = zeros(), dk_c = zeros(), dv_c = zeros(),
             delta_c = HostTensor::zeros(DType::f32, {B, H, T});
  every_core.attention_backward(heads(d_ctx), heads(q), heads(k), heads(v), heads(ctx_back), lse_back.view(),
                                key_mask.view(), scale, p, seed, offset, heads(dq_c), heads(dk_c),
                                heads(dv_c), delta_c.view());
  for (auto [name, device, reference, bounds] :
       {std::tuple{"dq", &dq_g, &dq_c, &bound.dq}, std::tuple{"dk", &dk_g, &dk_c, &bound.dk},
        std::tuple{"dv", &dv_g, &dv_c, &bound.dv}})
    loom_cuda::flash_test::expect_within(device->download(*gpu).floats(), reference->floats(), *bounds,
                                         what + " " + name);
  expect_close(delta_g.download(*gpu).floats(), delta_c.floats(), 1e-4, 1e-4, what + " delta");

  // Deterministic at this size too: a second backward gives the same bits.
  const std::vector<float> dk_first = dk_g.download(*gpu).floats();
  gpu->attention_backward(heads(d_ctx_g), heads(q_g), heads(k_g), heads(v_g), heads(ctx_g), lse_g.view(),
                          mask_g.view(), scale, p, seed, offset, heads(dq_g), heads(dk_g), heads(dv_g),
                          delta_g.view());
  expect_equal(dk_g.download(*gpu).floats(), dk_first, what + " dk rerun");
}

INSTANTIATE_TEST_SUITE_P(ProductionSizes, AttentionAtProductionSizeTest,
                         ::testing::Values(ProductionShape{256, 16, 128, 64, 0.1f},
                                           ProductionShape{16, 16, 512, 64, 0.0f},
                                           ProductionShape{2, 8, 512, 128, 0.1f}),
                         [](const ::testing::TestParamInfo<ProductionShape>& info) {
                           const ProductionShape& s = info.param;
                           std::string name = "B";  // appended piece by piece: GCC 12 misreads "B" + string
                           name += std::to_string(s.batch);
                           name += "_H" + std::to_string(s.heads);
                           name += "_T" + std::to_string(s.seq);
                           name += "_d" + std::to_string(s.head_dim);
                           if (s.p > 0) name += "_dropout";
                           return name;
                         });

}  // namespace
}  // namespace loom_cuda_test
