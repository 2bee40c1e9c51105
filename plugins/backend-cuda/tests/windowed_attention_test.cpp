// backend/cuda's windowed attention (WindowedAttention) on the GPU, both kernel families — the
// Tensor-Core kernels and, with `tensor_core_attention = false` or where they do not serve the call
// (f32, d = 32), the CUDA-core ones — against backend/cpu's windowed op on the same inputs, within
// the bounds of emulated/attention_error_bounds.hpp with the band: padded batch rows whose padding
// queries have empty bands (uniform over all T keys), a batch row with every key masked, windows
// that cross the tiles, dropout. A window reaching every key gives FusedAttention's bits, and the
// time of a local layer (window 64 at T = 512) against the full one is printed. The same kernels'
// index logic runs lane by lane on the CPU in emulated/windowed_attention_emulated_test.cpp; what
// every backend's windowed attention computes is tests/backend_ops/windowed_attention_test.cpp.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <tuple>

#include "attention_error_bounds.hpp"
#include "cuda_test_support.hpp"

namespace loom_cuda_test {
namespace {

using loom::DType;

struct BandShape {
  int64_t batch, heads, seq, head_dim, window;
  float p;
  DType dtype;
  bool tensor_cores;
};

void PrintTo(const BandShape& s, std::ostream* out) {
  *out << "B=" << s.batch << " H=" << s.heads << " T=" << s.seq << " d=" << s.head_dim
       << " window=" << s.window << " p=" << s.p << " " << loom::dtype_name(s.dtype)
       << (s.tensor_cores ? " tensor cores" : " CUDA cores");
}

class WindowedAttentionTest : public CudaOpTest, public ::testing::WithParamInterface<BandShape> {
 protected:
  loom_cpu::CpuBackend every_core{0};  // results do not depend on the thread count
};

/// Batch row b keeps its first T − (37·b + 5) mod T keys; the last batch row masks every key.
std::vector<float> padding_mask(int64_t B, int64_t T) {
  std::vector<float> mask(B * T, 0.0f);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = b + 1 == B ? 0 : T - (37 * b + 5) % T; t < T; ++t) mask[b * T + t] = loom::kMaskedKey;
  return mask;
}

TEST_P(WindowedAttentionTest, MatchesTheCpuWindowedOpWithinDerivedBounds) {
  const BandShape s = GetParam();
  const int64_t B = s.batch, H = s.heads, T = s.seq, d = s.head_dim;
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  const uint64_t seed = 0x5eedfaceull, offset = 321;
  HostTensor q = HostTensor::of(random_floats(B * T * H * d, 51, -2.0f, 2.0f), s.dtype, {B, T, H, d});
  HostTensor k = HostTensor::of(random_floats(B * T * H * d, 52, -2.0f, 2.0f), s.dtype, {B, T, H, d});
  HostTensor v = HostTensor::of(random_floats(B * T * H * d, 53), s.dtype, {B, T, H, d});
  HostTensor d_ctx = HostTensor::of(random_floats(B * T * H * d, 54), DType::f32, {B, T, H, d});
  const std::vector<float> mask = padding_mask(B, T);
  HostTensor key_mask = HostTensor::of(mask, DType::f32, {B, T});
  const auto heads = [](auto& t) { return t.view().permute({0, 2, 1, 3}); };
  DeviceTensor q_g = upload(q), k_g = upload(k), v_g = upload(v), d_ctx_g = upload(d_ctx),
               mask_g = upload(key_mask);
  DeviceTensor ctx_g = upload(HostTensor::zeros(s.dtype, {B, T, H, d}));
  DeviceTensor lse_g = upload(HostTensor::zeros(DType::f32, {B, H, T}));
  gpu->set_tensor_core_attention(s.tensor_cores);
  gpu->windowed_attention_forward(heads(q_g), heads(k_g), heads(v_g), mask_g.view(), scale, s.window, s.p,
                                  seed, offset, heads(ctx_g), lse_g.view());
  HostTensor ctx_c = HostTensor::zeros(s.dtype, {B, T, H, d}),
             lse_c = HostTensor::zeros(DType::f32, {B, H, T});
  every_core.windowed_attention_forward(heads(q), heads(k), heads(v), key_mask.view(), scale, s.window, s.p,
                                        seed, offset, heads(ctx_c), lse_c.view());
  HostTensor ctx_back = ctx_g.download(*gpu), lse_back = lse_g.download(*gpu);
  const std::vector<float> q_f = q.floats(), k_f = k.floats(), v_f = v.floats(), d_ctx_f = d_ctx.floats(),
                           ctx_f = ctx_back.floats();
  // The Tensor-Core kernels' rounding (bf16/f16 P̃, dS and d_ctx) bounds both families.
  const double u = s.dtype == DType::f16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
  const loom_cuda::flash_test::AttentionBounds bound = loom_cuda::flash_test::attention_error_bounds(
      {B, H, T, d, scale, s.p, seed, offset, q_f.data(), k_f.data(), v_f.data(), d_ctx_f.data(), ctx_f.data(),
       mask.data(), s.dtype == DType::f32 ? std::ldexp(1.0, -24) : u, s.dtype != DType::f32, s.window});
  loom_cuda::flash_test::expect_within(ctx_f, ctx_c.floats(), bound.ctx, "ctx");
  loom_cuda::flash_test::expect_within(lse_back.floats(), lse_c.floats(), bound.lse, "lse");

  const auto zeros = [&] { return HostTensor::zeros(DType::f32, {B, T, H, d}); };
  DeviceTensor dq_g = upload(zeros()), dk_g = upload(zeros()), dv_g = upload(zeros());
  DeviceTensor delta_g = upload(HostTensor::zeros(DType::f32, {B, H, T}));
  gpu->windowed_attention_backward(heads(d_ctx_g), heads(q_g), heads(k_g), heads(v_g), heads(ctx_g),
                                   lse_g.view(), mask_g.view(), scale, s.window, s.p, seed, offset,
                                   heads(dq_g), heads(dk_g), heads(dv_g), delta_g.view());
  HostTensor dq_c = zeros(), dk_c = zeros(), dv_c = zeros(),
             delta_c = HostTensor::zeros(DType::f32, {B, H, T});
  every_core.windowed_attention_backward(heads(d_ctx), heads(q), heads(k), heads(v), heads(ctx_back),
                                         lse_back.view(), key_mask.view(), scale, s.window, s.p, seed, offset,
                                         heads(dq_c), heads(dk_c), heads(dv_c), delta_c.view());
  for (auto [name, device, reference, bounds] :
       {std::tuple{"dq", &dq_g, &dq_c, &bound.dq}, std::tuple{"dk", &dk_g, &dk_c, &bound.dk},
        std::tuple{"dv", &dv_g, &dv_c, &bound.dv}})
    loom_cuda::flash_test::expect_within(device->download(*gpu).floats(), reference->floats(), *bounds, name);
  expect_close(delta_g.download(*gpu).floats(), delta_c.floats(), 1e-4, 1e-4, "delta");
  gpu->set_tensor_core_attention(true);
}

INSTANTIATE_TEST_SUITE_P(Bands, WindowedAttentionTest,
                         ::testing::Values(BandShape{3, 2, 77, 64, 3, 0.1f, DType::bf16, true},
                                           BandShape{3, 2, 77, 64, 3, 0.1f, DType::bf16, false},
                                           BandShape{2, 4, 512, 64, 64, 0.1f, DType::bf16, true},
                                           BandShape{2, 4, 512, 64, 64, 0.1f, DType::bf16, false},
                                           BandShape{3, 2, 200, 128, 40, 0.0f, DType::f16, true},
                                           BandShape{3, 2, 200, 128, 40, 0.0f, DType::f16, false},
                                           BandShape{3, 2, 130, 32, 5, 0.1f, DType::bf16, true},
                                           BandShape{3, 2, 130, 64, 0, 0.1f, DType::f32, true}),
                         [](const ::testing::TestParamInfo<BandShape>& info) {
                           const BandShape& s = info.param;
                           std::string name = "T";  // appended piece by piece: GCC 12 misreads "T" + string
                           name += std::to_string(s.seq);
                           name += "_d" + std::to_string(s.head_dim);
                           name += "_w" + std::to_string(s.window);
                           name += std::string("_") + loom::dtype_name(s.dtype);
                           // The Tensor-Core kernels serve 16-bit storage at d = 64 or 128 when the option is
                           // on.
                           const bool served = s.tensor_cores && s.dtype != DType::f32 &&
                                               (s.head_dim == 64 || s.head_dim == 128);
                           name += served ? "_tensor_cores" : "_cuda_cores";
                           return name;
                         });

// A window that reaches every key (T − 1 or more) is FusedAttention: the same kernels, the same bits.
TEST_F(CudaOpTest, WindowedAttentionReachingEveryKeyIsFusedAttentionBitForBit) {
  const int64_t B = 2, H = 2, T = 130, d = 64;
  HostTensor q = HostTensor::of(random_floats(B * T * H * d, 61, -2.0f, 2.0f), DType::bf16, {B, T, H, d});
  HostTensor k = HostTensor::of(random_floats(B * T * H * d, 63, -2.0f, 2.0f), DType::bf16, {B, T, H, d});
  HostTensor v = HostTensor::of(random_floats(B * T * H * d, 64), DType::bf16, {B, T, H, d});
  HostTensor d_ctx = HostTensor::of(random_floats(B * T * H * d, 62), DType::f32, {B, T, H, d});
  HostTensor key_mask = HostTensor::of(padding_mask(B, T), DType::f32, {B, T});
  DeviceTensor q_g = upload(q), k_g = upload(k), v_g = upload(v), d_ctx_g = upload(d_ctx),
               mask_g = upload(key_mask);
  const auto heads = [](auto& t) { return t.view().permute({0, 2, 1, 3}); };
  const auto run = [&](int64_t window) {
    const auto zeros = [&] { return upload(HostTensor::zeros(DType::f32, {B, T, H, d})); };
    DeviceTensor ctx_g = upload(HostTensor::zeros(DType::bf16, {B, T, H, d}));
    DeviceTensor lse_g = upload(HostTensor::zeros(DType::f32, {B, H, T}));
    DeviceTensor dq_g = zeros(), dk_g = zeros(), dv_g = zeros();
    DeviceTensor delta_g = upload(HostTensor::zeros(DType::f32, {B, H, T}));
    if (window == -2) {  // FusedAttention's ops
      gpu->attention_forward(heads(q_g), heads(k_g), heads(v_g), mask_g.view(), 0.125f, 0.1f, 3, 4,
                             heads(ctx_g), lse_g.view());
      gpu->attention_backward(heads(d_ctx_g), heads(q_g), heads(k_g), heads(v_g), heads(ctx_g), lse_g.view(),
                              mask_g.view(), 0.125f, 0.1f, 3, 4, heads(dq_g), heads(dk_g), heads(dv_g),
                              delta_g.view());
    } else {
      gpu->windowed_attention_forward(heads(q_g), heads(k_g), heads(v_g), mask_g.view(), 0.125f, window, 0.1f,
                                      3, 4, heads(ctx_g), lse_g.view());
      gpu->windowed_attention_backward(heads(d_ctx_g), heads(q_g), heads(k_g), heads(v_g), heads(ctx_g),
                                       lse_g.view(), mask_g.view(), 0.125f, window, 0.1f, 3, 4, heads(dq_g),
                                       heads(dk_g), heads(dv_g), delta_g.view());
    }
    return std::vector<std::vector<float>>{ctx_g.download(*gpu).floats(), lse_g.download(*gpu).floats(),
                                           dq_g.download(*gpu).floats(), dk_g.download(*gpu).floats(),
                                           dv_g.download(*gpu).floats()};
  };
  for (const bool tensor_cores : {true, false}) {
    gpu->set_tensor_core_attention(tensor_cores);
    const auto want = run(-2);
    for (const int64_t window : {T - 1, T, T + 100, int64_t{-1}}) {
      const auto got = run(window);
      const std::string what =
          std::string(tensor_cores ? "tensor cores" : "CUDA cores") + ", window " + std::to_string(window);
      expect_equal(got[0], want[0], what + " ctx");
      expect_equal(got[1], want[1], what + " lse");
      expect_equal(got[2], want[2], what + " dq");
      expect_equal(got[3], want[3], what + " dk");
      expect_equal(got[4], want[4], what + " dv");
    }
  }
  gpu->set_tensor_core_attention(true);
}

// The speed a band buys: a local layer (window 64) at T = 512 walks about a third of the key and
// query tiles of the full layer. Printed and recorded as the test's `window64_over_full` property,
// not asserted: gpu-check also runs this program under compute-sanitizer, whose instrumentation
// would make any bound on the ratio meaningless there.
TEST_F(CudaOpTest, WindowedAttentionAtWindow64OfT512AgainstTheFullLayerIsTimed) {
  const int64_t B = 8, H = 16, T = 512, d = 64;
  HostTensor q = HostTensor::of(random_floats(B * T * H * d, 71, -2.0f, 2.0f), DType::bf16, {B, T, H, d});
  HostTensor d_ctx = HostTensor::of(random_floats(B * T * H * d, 72), DType::f32, {B, T, H, d});
  DeviceTensor q_g = upload(q), d_ctx_g = upload(d_ctx);
  DeviceTensor ctx_g = upload(HostTensor::zeros(DType::bf16, {B, T, H, d}));
  DeviceTensor lse_g = upload(HostTensor::zeros(DType::f32, {B, H, T}));
  DeviceTensor dq_g = upload(HostTensor::zeros(DType::f32, {B, T, H, d}));
  DeviceTensor dk_g = upload(HostTensor::zeros(DType::f32, {B, T, H, d}));
  DeviceTensor dv_g = upload(HostTensor::zeros(DType::f32, {B, T, H, d}));
  DeviceTensor delta_g = upload(HostTensor::zeros(DType::f32, {B, H, T}));
  const auto heads = [](auto& t) { return t.view().permute({0, 2, 1, 3}); };
  const auto layer = [&](int64_t window) {
    gpu->windowed_attention_forward(heads(q_g), heads(q_g), heads(q_g), {}, 0.125f, window, 0.1f, 3, 4,
                                    heads(ctx_g), lse_g.view());
    gpu->windowed_attention_backward(heads(d_ctx_g), heads(q_g), heads(q_g), heads(q_g), heads(ctx_g),
                                     lse_g.view(), {}, 0.125f, window, 0.1f, 3, 4, heads(dq_g), heads(dk_g),
                                     heads(dv_g), delta_g.view());
  };
  const auto milliseconds = [&](int64_t window) {
    layer(window);  // warm-up
    gpu->synchronize();
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 10; ++i) layer(window);
    gpu->synchronize();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count() / 10;
  };
  const double full = milliseconds(-1), local = milliseconds(64);
  std::printf(
      "attention forward + backward, B=%lld H=%lld T=%lld d=%lld bf16: full %.3f ms, window 64 %.3f ms "
      "(%.2f of the full layer)\n",
      static_cast<long long>(B), static_cast<long long>(H), static_cast<long long>(T),
      static_cast<long long>(d), full, local, local / full);
  RecordProperty("window64_over_full", std::to_string(local / full));
  EXPECT_GT(full, 0.0);
}

}  // namespace
}  // namespace loom_cuda_test
