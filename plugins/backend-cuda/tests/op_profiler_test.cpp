// OpProfiler on backend/cuda: CUDA events around each op on the stream. A sequence of training
// ops — an upload, GEMMs, fused attention forward and backward, LayerNorm, a zero, the non-finite
// check, a download — is timed per family with positive device times whose sum fits in the wall
// time of the sequence; timing makes the host wait no more often than without it (no op waits,
// the one wait is take_op_profile's, after the step's synchronize); results are the same bits
// with timing on and off; the event pool is reused from step to step and stays bounded when
// nobody takes the totals. Skips without a GPU (fails under LOOM_REQUIRE_GPU=1).
#include <chrono>

#include "cuda_op_timer.hpp"
#include "cuda_test_support.hpp"
#include "loom/sdk/ops/op_profiler.hpp"
#include "loom/sdk/ops/transfer_counts.hpp"

namespace loom_cuda_test {
namespace {

using loom::DType;
using loom::OpFamily;
using loom::OpFamilyTime;

class CudaOpProfilerTest : public CudaOpTest {};

std::vector<OpFamilyTime> take_profile(loom::OpProfiler& profiler) {
  std::vector<OpFamilyTime> totals(loom::kOpFamilyCount);
  EXPECT_EQ(profiler.take_op_profile(totals.data(), totals.size()), loom::kOpFamilyCount);
  return totals;
}

const OpFamilyTime& of(const std::vector<OpFamilyTime>& totals, OpFamily family) {
  return totals[static_cast<size_t>(family)];
}

/// The tensors of one small training-like sequence of ops, on the GPU.
struct Step {
  static constexpr int64_t n = 512, B = 2, H = 4, T = 128, d = 64;
  HostTensor a = HostTensor::of(random_floats(n * n, 1), DType::f32, {n, n});
  HostTensor b = HostTensor::of(random_floats(n * n, 2), DType::f32, {n, n});
  HostTensor qkv = HostTensor::of(random_floats(B * H * T * d, 3), DType::f32, {B, H, T, d});
  HostTensor ones = HostTensor::of(std::vector<float>(n, 1.0f), DType::f32, {n});
  HostTensor zeros_n = HostTensor::zeros(DType::f32, {n});
  DeviceTensor a_g, b_g, c_g, y_g, gamma_g, beta_g, mean_g, rstd_g, flag_g;
  DeviceTensor q_g, ctx_g, dq_g, dk_g, dv_g, lse_g, delta_g;
  HostTensor out = HostTensor::zeros(DType::f32, {n, n});

  explicit Step(loom::Backend& gpu)
      : a_g(gpu, a),
        b_g(gpu, b),
        c_g(gpu, HostTensor::zeros(DType::f32, {n, n})),
        y_g(gpu, HostTensor::zeros(DType::f32, {n, n})),
        gamma_g(gpu, ones),
        beta_g(gpu, zeros_n),
        mean_g(gpu, zeros_n),
        rstd_g(gpu, zeros_n),
        flag_g(gpu, HostTensor::zeros(DType::i32, {1})),  // check_finite's flag is an i32
        q_g(gpu, qkv),
        ctx_g(gpu, HostTensor::zeros(DType::f32, {B, H, T, d})),
        dq_g(gpu, HostTensor::zeros(DType::f32, {B, H, T, d})),
        dk_g(gpu, HostTensor::zeros(DType::f32, {B, H, T, d})),
        dv_g(gpu, HostTensor::zeros(DType::f32, {B, H, T, d})),
        lse_g(gpu, HostTensor::zeros(DType::f32, {B, H, T})),
        delta_g(gpu, HostTensor::zeros(DType::f32, {B, H, T})) {}

  void run(loom_cuda::CudaBackend& gpu) {
    gpu.copy_from_host(a_g.buffer.data(), a.bytes.data(), a.bytes.size());
    gpu.gemm(a_g.view(), false, b_g.view(), true, c_g.view(), 1.0f, 0.0f);
    gpu.gemm(c_g.view(), true, a_g.view(), false, y_g.view(), 0.5f, 1.0f);
    const float scale = 0.125f;
    gpu.attention_forward(q_g.view(), q_g.view(), q_g.view(), {}, scale, 0.0f, 0, 0, ctx_g.view(), lse_g.view());
    gpu.attention_backward(ctx_g.view(), q_g.view(), q_g.view(), q_g.view(), ctx_g.view(), lse_g.view(), {}, scale,
                           0.0f, 0, 0, dq_g.view(), dk_g.view(), dv_g.view(), delta_g.view());
    gpu.layernorm_forward(c_g.view(), gamma_g.view(), beta_g.view(), 1e-12f, y_g.view(), mean_g.view(),
                          rstd_g.view());
    gpu.zero(c_g.view());
    gpu.check_finite(y_g.view(), flag_g.view());
    gpu.copy_to_host(out.bytes.data(), y_g.buffer.data(), out.bytes.size());
  }
};

TEST_F(CudaOpProfilerTest, TimesEachFamilyOnTheStreamWithoutWaiting) {
  Step step(*gpu);
  step.run(*gpu);  // warm-up: GEMM plans, scratch
  gpu->synchronize();
  const HostTensor unprofiled = step.out;
  const loom::TransferCounts off_before = gpu->transfer_counts();
  step.run(*gpu);
  gpu->synchronize();
  const uint64_t waits_off = loom::host_waits(gpu->transfer_counts()) - loom::host_waits(off_before);
  for (const OpFamilyTime& family : take_profile(*gpu)) EXPECT_EQ(family.calls, 0u) << "off by default";

  gpu->set_op_profiling(true);
  const loom::TransferCounts on_before = gpu->transfer_counts();
  const auto start = std::chrono::steady_clock::now();
  step.run(*gpu);
  gpu->synchronize();
  const double wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  const uint64_t waits_on = loom::host_waits(gpu->transfer_counts()) - loom::host_waits(on_before);
  const std::vector<OpFamilyTime> totals = take_profile(*gpu);
  EXPECT_EQ(waits_on, waits_off) << "timing made an op wait for the device";

  EXPECT_EQ(of(totals, OpFamily::gemm).calls, 2u);
  EXPECT_EQ(of(totals, OpFamily::attention_forward).calls, 1u);
  EXPECT_EQ(of(totals, OpFamily::attention_backward).calls, 1u);
  EXPECT_EQ(of(totals, OpFamily::normalization).calls, 1u);
  EXPECT_EQ(of(totals, OpFamily::elementwise).calls, 1u);
  EXPECT_EQ(of(totals, OpFamily::optimizer).calls, 1u);
  EXPECT_EQ(of(totals, OpFamily::upload).calls, 1u);
  EXPECT_EQ(of(totals, OpFamily::download).calls, 1u);
  double sum = 0;
  for (OpFamily family : {OpFamily::gemm, OpFamily::attention_forward, OpFamily::attention_backward,
                          OpFamily::normalization, OpFamily::upload, OpFamily::download}) {
    EXPECT_GT(of(totals, family).milliseconds, 0.0) << loom::op_family_name(family);
  }
  for (const OpFamilyTime& family : totals) sum += family.milliseconds;
  EXPECT_LE(sum, wall_ms) << "device time of the ops exceeds the wall time around them";
  expect_equal(step.out.floats(), unprofiled.floats(), "output with timing on vs off");

  // Taken: nothing left; switched off: nothing timed.
  for (const OpFamilyTime& family : take_profile(*gpu)) EXPECT_EQ(family.calls, 0u);
  gpu->set_op_profiling(false);
  step.run(*gpu);
  gpu->synchronize();
  for (const OpFamilyTime& family : take_profile(*gpu)) EXPECT_EQ(family.calls, 0u) << "switched off";
}

TEST_F(CudaOpProfilerTest, EventPoolIsReusedAndBounded) {
  Step step(*gpu);
  loom_cuda::CudaEventOpTimer timer(gpu->stream());
  const auto timed_gemm = [&] {
    const loom_backend::OpTimingScope scope(&timer, "gemm");
    gpu->gemm(step.a_g.view(), false, step.b_g.view(), false, step.c_g.view(), 1.0f, 0.0f);
  };
  std::vector<OpFamilyTime> totals(loom::kOpFamilyCount);
  for (int round = 0; round < 3; ++round) {
    timed_gemm();
    timed_gemm();
    EXPECT_EQ(timer.take(totals.data(), totals.size()), loom::kOpFamilyCount);
    EXPECT_EQ(of(totals, OpFamily::gemm).calls, 2u);
    EXPECT_GT(of(totals, OpFamily::gemm).milliseconds, 0.0);
    EXPECT_EQ(timer.pooled_events(), 4u) << "two events per op pending at once, reused";
  }
  // Never taken: pending pairs are summed early, the pool stops growing.
  const size_t ops = loom_cuda::CudaEventOpTimer::kMaxPendingOps + 5;
  for (size_t i = 0; i < ops; ++i) {
    const loom_backend::OpTimingScope scope(&timer, "fill");
  }
  EXPECT_LE(timer.pooled_events(), 2 * loom_cuda::CudaEventOpTimer::kMaxPendingOps);
  EXPECT_EQ(timer.take(totals.data(), totals.size()), loom::kOpFamilyCount);
  EXPECT_EQ(of(totals, OpFamily::elementwise).calls, ops);
}

}  // namespace
}  // namespace loom_cuda_test
