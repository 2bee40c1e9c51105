// backend/cuda's packed attention (PackedAttention) where the Tensor-Core kernels serve it: one
// launch of each kernel over every sequence (flash_packed.cuh) against the same kernels launched
// once per sequence (windowed attention on each sequence's rows, the per-sequence path), bit for
// bit, forward and backward, dropout on, with and without a window; then the time of both on a
// batch of bert-base heads (32 sequences of 64 to 512 tokens), printed. The one-launch blocks'
// index logic runs lane by lane on the CPU in emulated/packed_attention_emulated_test.cpp; what
// every backend's packed attention computes is tests/backend_ops/packed_attention_test.cpp.
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "cuda_test_support.hpp"
#include "loom_backend/packed_attention_contract.hpp"

namespace loom_cuda_test {
namespace {

using loom::DType;

struct PackedBatch {
  std::vector<int32_t> starts;
  int64_t tokens, longest;
};

PackedBatch packed_batch(const std::vector<int32_t>& lengths) {
  PackedBatch batch{{0}, 0, 0};
  for (const int32_t l : lengths) {
    batch.starts.push_back(batch.starts.back() + l);
    batch.longest = std::max<int64_t>(batch.longest, l);
  }
  batch.tokens = batch.starts.back();
  return batch;
}

/// Forward and backward of a packed call on the GPU, one launch per kernel or once per sequence.
struct PackedRun {
  PackedRun(loom::Backend& backend, const PackedBatch& batch, int64_t H, int64_t d, uint32_t seed)
      : batch(batch),
        H(H),
        d(d),
        q(DeviceTensor(backend, HostTensor::of(random_floats(batch.tokens * H * d, seed, -2.0f, 2.0f), DType::bf16,
                                     {1, batch.tokens, H, d}))),
        k(DeviceTensor(backend, HostTensor::of(random_floats(batch.tokens * H * d, seed + 1, -2.0f, 2.0f), DType::bf16,
                                     {1, batch.tokens, H, d}))),
        v(DeviceTensor(backend, 
            HostTensor::of(random_floats(batch.tokens * H * d, seed + 2), DType::bf16, {1, batch.tokens, H, d}))),
        d_ctx(DeviceTensor(backend, 
            HostTensor::of(random_floats(batch.tokens * H * d, seed + 3), DType::f32, {1, batch.tokens, H, d}))),
        starts(DeviceTensor(backend, HostTensor::ids(std::vector<int64_t>(batch.starts.begin(), batch.starts.end()), DType::i32,
                                           {static_cast<int64_t>(batch.starts.size())}))),
        ctx(DeviceTensor(backend, HostTensor::zeros(DType::bf16, {1, batch.tokens, H, d}))),
        lse(DeviceTensor(backend, HostTensor::zeros(DType::f32, {1, H, batch.tokens}))),
        delta(DeviceTensor(backend, HostTensor::zeros(DType::f32, {1, H, batch.tokens}))),
        dq(DeviceTensor(backend, HostTensor::zeros(DType::f32, {1, batch.tokens, H, d}))),
        dk(DeviceTensor(backend, HostTensor::zeros(DType::f32, {1, batch.tokens, H, d}))),
        dv(DeviceTensor(backend, HostTensor::zeros(DType::f32, {1, batch.tokens, H, d}))) {}

  static loom::Tensor heads(const DeviceTensor& t) { return t.view().permute({0, 2, 1, 3}); }

  void run(loom_cuda::CudaBackend& gpu, bool one_launch, int64_t window, float p) {
    const float scale = 0.125f;
    const uint64_t seed = 0xabcdefull, offset = 99;
    if (one_launch) {
      gpu.packed_attention_forward(heads(q), heads(k), heads(v), starts.view(), batch.starts.data(), batch.longest,
                                   scale, window, p, seed, offset, heads(ctx), lse.view());
      gpu.packed_attention_backward(heads(d_ctx), heads(q), heads(k), heads(v), heads(ctx), lse.view(), starts.view(),
                                    batch.starts.data(), batch.longest, scale, window, p, seed, offset, heads(dq),
                                    heads(dk), heads(dv), delta.view());
      return;
    }
    const loom_backend::PackedDims dims{{1, H, batch.tokens, d},
                                        static_cast<int64_t>(batch.starts.size()) - 1,
                                        batch.longest};
    loom_backend::for_each_packed_sequence(dims, batch.starts.data(), [&](const loom_backend::PackedSequenceCall& c) {
      gpu.windowed_attention_forward(c.rows(heads(q)), c.rows(heads(k)), c.rows(heads(v)), loom::Tensor{}, scale,
                                     window, p, seed, offset + c.first_element, c.rows(heads(ctx)),
                                     c.statistics(lse.view()));
    });
    loom_backend::for_each_packed_sequence(dims, batch.starts.data(), [&](const loom_backend::PackedSequenceCall& c) {
      gpu.windowed_attention_backward(c.rows(heads(d_ctx)), c.rows(heads(q)), c.rows(heads(k)), c.rows(heads(v)),
                                      c.rows(heads(ctx)), c.statistics(lse.view()), loom::Tensor{}, scale, window, p,
                                      seed, offset + c.first_element, c.rows(heads(dq)), c.rows(heads(dk)),
                                      c.rows(heads(dv)), c.statistics(delta.view()));
    });
  }

  const PackedBatch& batch;
  int64_t H, d;
  DeviceTensor q, k, v, d_ctx, starts, ctx, lse, delta, dq, dk, dv;
};

std::vector<int32_t> random_lengths(int count, int shortest, int longest, uint32_t seed) {
  std::mt19937 random(seed);
  std::uniform_int_distribution<int32_t> length(shortest, longest);
  std::vector<int32_t> lengths(static_cast<size_t>(count));
  for (auto& l : lengths) l = length(random);
  return lengths;
}

TEST_F(CudaOpTest, PackedAttentionInOneLaunchEqualsThePerSequenceLaunchesBitForBit) {
  const PackedBatch batch = packed_batch({77, 1, 130, 64, 37, 200, 5});
  for (const int64_t window : {int64_t{-1}, int64_t{16}, int64_t{100}}) {
    for (const int64_t d : {int64_t{64}, int64_t{128}}) {
      SCOPED_TRACE("window " + std::to_string(window) + ", d " + std::to_string(d));
      PackedRun one(*gpu, batch, 3, d, 71), each(*gpu, batch, 3, d, 71);
      one.run(*gpu, true, window, 0.1f);
      each.run(*gpu, false, window, 0.1f);
      for (auto [name, a, b] : {std::tuple{"ctx", &one.ctx, &each.ctx}, std::tuple{"lse", &one.lse, &each.lse},
                                std::tuple{"delta", &one.delta, &each.delta}, std::tuple{"dq", &one.dq, &each.dq},
                                std::tuple{"dk", &one.dk, &each.dk}, std::tuple{"dv", &one.dv, &each.dv}})
        expect_same_bits(a->download(*gpu), b->download(*gpu), name);
    }
  }
}

// Not a benchmark (nothing is asserted of the times): the two paths' cost on a realistic batch, for
// the log of the GPU check.
TEST_F(CudaOpTest, PackedAttentionOneLaunchAgainstPerSequenceLaunchesTimed) {
  const PackedBatch batch = packed_batch(random_lengths(32, 64, 512, 5));
  PackedRun one(*gpu, batch, 12, 64, 81), each(*gpu, batch, 12, 64, 81);
  const auto time = [&](PackedRun& r, bool one_launch) {
    r.run(*gpu, one_launch, -1, 0.1f);  // warm-up
    gpu->synchronize();
    const auto begin = std::chrono::steady_clock::now();
    constexpr int kRepeats = 10;
    for (int i = 0; i < kRepeats; ++i) r.run(*gpu, one_launch, -1, 0.1f);
    gpu->synchronize();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - begin).count() / kRepeats;
  };
  const double one_ms = time(one, true), each_ms = time(each, false);
  std::printf("packed attention, 32 sequences of 64-512 tokens (%lld tokens), 12 heads of 64, bf16, dropout 0.1: "
              "forward + backward %.3f ms in one launch per kernel, %.3f ms once per sequence (%.2fx)\n",
              static_cast<long long>(batch.tokens), one_ms, each_ms, each_ms / one_ms);
  expect_same_bits(one.dq.download(*gpu), each.dq.download(*gpu), "dq");
}

}  // namespace
}  // namespace loom_cuda_test
