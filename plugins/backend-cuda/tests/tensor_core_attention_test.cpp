// backend/cuda's two attention kernel families, within bounds derived from the Tensor-Core
// kernels' own rounding (emulated/attention_error_bounds.hpp, the model the CPU-driven kernel tests
// use too): the Tensor-Core kernels against the CUDA-core ones (the tensor_core_attention option)
// on an odd shape, and at production sizes — B·H = 4,096 (B = 256, H = 16, T = 128, d = 64) with
// dropout, B·H = 256 at T = 512 without, and d = 128 at T = 512 — against backend/cpu's fused op,
// bf16 with padding. What every backend's fused attention computes, at odd sizes and every
// storage: tests/backend_ops/attention_test.cpp.
#include <cmath>
#include <tuple>

#include "attention_error_bounds.hpp"
#include "cuda_test_support.hpp"

namespace loom_cuda_test {
namespace {

using loom::DType;

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
// (tests/backend_ops/attention_test.cpp, plugins/backend-cpu/tests/thread_independence_test.cpp),
// so it runs here on every core: on one it takes
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
