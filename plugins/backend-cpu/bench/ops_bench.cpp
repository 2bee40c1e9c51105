// The memory-bound ops at BERT-base shapes (4096 tokens × 768, FFN 3072, 12 heads of 128 keys,
// MLM over 15% of tokens × 30528 classes). Counter: GB/s of the bytes each op must move.
#include <benchmark/benchmark.h>

#include <vector>

#include "cpu_backend.hpp"
#include "throughput_counters.hpp"

namespace {

using loom::DType;
using loom::Tensor;

constexpr int64_t kTokens = 4096, kHidden = 768, kFfn = 3072, kBatch = 32, kHeads = 12, kSeq = 128;

loom_cpu::CpuBackend& backend() {
  static loom_cpu::CpuBackend instance(loom_bench::threads_from_environment());
  return instance;
}

Tensor f32(std::vector<float>& v, std::initializer_list<int64_t> shape) {
  return Tensor::contiguous(v.data(), DType::f32, shape);
}

void set_bytes(benchmark::State& state, const loom_bench::Throughput& clock, double bytes_per_call) {
  clock.report(state, "GB", bytes_per_call / 1e9);
}

void BM_LayerNormForward(benchmark::State& state) {
  std::vector<float> x(kTokens * kHidden, 0.5f), y(x.size()), g(kHidden, 1.0f), b(kHidden), mean(kTokens),
      rstd(kTokens);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 97) * 0.01f;
  const loom_bench::Throughput clock;
  for (auto _ : state)
    backend().layernorm_forward(f32(x, {kTokens, kHidden}), f32(g, {kHidden}), f32(b, {kHidden}), 1e-12f,
                                f32(y, {kTokens, kHidden}), f32(mean, {kTokens}), f32(rstd, {kTokens}));
  set_bytes(state, clock, 2.0 * x.size() * 4);
}

void BM_LayerNormBackward(benchmark::State& state) {
  std::vector<float> x(kTokens * kHidden, 0.5f), dy(x.size(), 0.1f), dx(x.size()), g(kHidden, 1.0f),
      dg(kHidden), db(kHidden), mean(kTokens, 0.5f), rstd(kTokens, 1.0f);
  const loom_bench::Throughput clock;
  for (auto _ : state)
    backend().layernorm_backward(f32(dy, {kTokens, kHidden}), f32(x, {kTokens, kHidden}), f32(g, {kHidden}),
                                 f32(mean, {kTokens}), f32(rstd, {kTokens}), f32(dx, {kTokens, kHidden}),
                                 f32(dg, {kHidden}), f32(db, {kHidden}), false);
  set_bytes(state, clock, 5.0 * x.size() * 4);  // dy, x read twice (γ/β pass and dx pass), dx written
}

void BM_BiasGeluForward(benchmark::State& state) {
  const auto variant = static_cast<loom::Gelu>(state.range(0));
  std::vector<float> x(kTokens * kFfn, 0.3f), y(x.size()), bias(kFfn, 0.1f);
  const loom_bench::Throughput clock;
  for (auto _ : state)
    backend().bias_gelu_forward(f32(x, {kTokens, kFfn}), f32(bias, {kFfn}), f32(y, {kTokens, kFfn}), variant);
  set_bytes(state, clock, 2.0 * x.size() * 4);
}

void BM_BiasGeluBackward(benchmark::State& state) {
  const auto variant = static_cast<loom::Gelu>(state.range(0));
  std::vector<float> x(kTokens * kFfn, 0.3f), dy(x.size(), 0.2f), dx(x.size()), bias(kFfn, 0.1f), dbias(kFfn);
  const loom_bench::Throughput clock;
  for (auto _ : state)
    backend().bias_gelu_backward(f32(dy, {kTokens, kFfn}), f32(x, {kTokens, kFfn}), f32(bias, {kFfn}),
                                 f32(dx, {kTokens, kFfn}), f32(dbias, {kFfn}), variant);
  set_bytes(state, clock, 4.0 * x.size() * 4);  // dy, x, dx, dx again for the bias sums
}

void BM_SoftmaxForward(benchmark::State& state) {
  std::vector<float> s(kBatch * kHeads * kSeq * kSeq, 0.1f), p(s.size()), mask(kBatch * kSeq, 0.0f);
  const loom_bench::Throughput clock;
  for (auto _ : state)
    backend().softmax_forward(f32(s, {kBatch, kHeads, kSeq, kSeq}), f32(mask, {kBatch, kSeq}), 0.125f,
                              f32(p, {kBatch, kHeads, kSeq, kSeq}));
  set_bytes(state, clock, 2.0 * s.size() * 4);
}

void BM_SoftmaxBackward(benchmark::State& state) {
  std::vector<float> dp(kBatch * kHeads * kSeq * kSeq, 0.1f), p(dp.size(), 1.0f / kSeq), ds(dp.size());
  const loom_bench::Throughput clock;
  for (auto _ : state)
    backend().softmax_backward(f32(dp, {kBatch, kHeads, kSeq, kSeq}), f32(p, {kBatch, kHeads, kSeq, kSeq}),
                               0.125f, f32(ds, {kBatch, kHeads, kSeq, kSeq}));
  set_bytes(state, clock, 3.0 * dp.size() * 4);
}

void BM_DropoutForward(benchmark::State& state) {
  std::vector<float> x(kTokens * kHidden, 1.0f), y(x.size());
  uint64_t offset = 0;
  const loom_bench::Throughput clock;
  for (auto _ : state) {
    backend().dropout_forward(f32(x, {kTokens, kHidden}), f32(y, {kTokens, kHidden}), 0.1f, 42, offset);
    offset += x.size();
  }
  set_bytes(state, clock, 2.0 * x.size() * 4);
}

void BM_CrossEntropyMlm(benchmark::State& state) {
  const int64_t rows = kTokens * 15 / 100, classes = 30522, width = 30528;
  std::vector<float> logits(rows * width, 0.01f), dlogits(logits.size()), loss(1);
  std::vector<int32_t> targets(rows);
  for (int64_t r = 0; r < rows; ++r) targets[r] = static_cast<int32_t>((r * 7919) % classes);
  const loom_bench::Throughput clock;
  for (auto _ : state)
    backend().cross_entropy(f32(logits, {rows, width}),
                            Tensor::contiguous(targets.data(), DType::i32, {rows}), classes, -100, 1.0f,
                            f32(loss, {1}), f32(dlogits, {rows, width}), Tensor{}, Tensor{});
  set_bytes(state, clock, 2.0 * logits.size() * 4);
}

void BM_EmbeddingGather(benchmark::State& state) {
  const int64_t vocab = 30522;
  std::vector<float> table(vocab * kHidden, 0.01f), out(kTokens * kHidden);
  std::vector<int32_t> ids(kTokens);
  for (int64_t i = 0; i < kTokens; ++i) ids[i] = static_cast<int32_t>((i * 7919) % vocab);
  const loom_bench::Throughput clock;
  for (auto _ : state)
    backend().embedding_gather(f32(table, {vocab, kHidden}),
                               Tensor::contiguous(ids.data(), DType::i32, {kTokens}),
                               f32(out, {kTokens, kHidden}), false);
  set_bytes(state, clock, 2.0 * out.size() * 4);
}

void BM_CastF32ToBf16(benchmark::State& state) {
  std::vector<float> x(kHidden * kFfn, 0.3f);
  std::vector<loom::BFloat16> y(x.size());
  const loom_bench::Throughput clock;
  for (auto _ : state)
    backend().cast(f32(x, {kHidden, kFfn}), Tensor::contiguous(y.data(), DType::bf16, {kHidden, kFfn}));
  set_bytes(state, clock, 6.0 * x.size());
}

#define LOOM_OP_BENCH(fn) BENCHMARK(fn)->Unit(benchmark::kMicrosecond)->MinTime(0.2)->UseRealTime()
LOOM_OP_BENCH(BM_LayerNormForward);
LOOM_OP_BENCH(BM_LayerNormBackward);
LOOM_OP_BENCH(BM_BiasGeluForward)->Arg(0)->Arg(1);
LOOM_OP_BENCH(BM_BiasGeluBackward)->Arg(0)->Arg(1);
LOOM_OP_BENCH(BM_SoftmaxForward);
LOOM_OP_BENCH(BM_SoftmaxBackward);
LOOM_OP_BENCH(BM_DropoutForward);
LOOM_OP_BENCH(BM_CrossEntropyMlm);
LOOM_OP_BENCH(BM_EmbeddingGather);
LOOM_OP_BENCH(BM_CastF32ToBf16);

}  // namespace
