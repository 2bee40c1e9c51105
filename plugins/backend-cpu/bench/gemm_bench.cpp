// GEMM at BERT shapes: M = 4096 tokens, K×N as in docs/decisions/gemm-library.md, through the
// backend (what blocks get) and, for the library decision, oneDNN matmul directly (f32, and bf16
// with the weights in oneDNN's preferred blocked layout). Counters: GFLOP/s = 2·M·N·K / time.
#include <benchmark/benchmark.h>

#include <oneapi/dnnl/dnnl.hpp>
#include <vector>

#include "cpu_backend.hpp"
#include "throughput_counters.hpp"

namespace {

constexpr int64_t kTokens = 4096;
const std::vector<std::vector<int64_t>> kShapes = {
    {128, 384}, {256, 1024}, {512, 2048}, {768, 3072}, {768, 30522}};

loom_cpu::CpuBackend& backend() {
  static loom_cpu::CpuBackend instance(loom_bench::threads_from_environment());
  return instance;
}

void set_flops(benchmark::State& state, const loom_bench::Throughput& clock, double flops_per_call) {
  clock.report(state, "GFLOP", flops_per_call / 1e9);
}

template <typename T>
std::vector<T> filled(size_t n, float value) {
  std::vector<T> v(n);
  for (auto& x : v) {
    if constexpr (std::is_same_v<T, float>)
      x = value;
    else
      x = loom::to_bf16(value);
  }
  return v;
}

/// Backend gemm, forward orientation C[M×N] = A[M×K]·B[K×N] (transpose_b = false) or the linear
/// layer's y = x·Wᵀ with W [N×K] (transpose_b = true).
template <typename T>
void BM_BackendGemm(benchmark::State& state) {
  const int64_t m = kTokens, k = state.range(0), n = state.range(1);
  const bool transpose_b = state.range(2) != 0;
  auto a = filled<T>(m * k, 0.01f), b = filled<T>(k * n, 0.02f);
  std::vector<float> c(m * n);
  const auto dtype = loom::dtype_of<T>();
  const loom::Tensor av = loom::Tensor::contiguous(a.data(), dtype, {m, k});
  const loom::Tensor bv = transpose_b ? loom::Tensor::contiguous(b.data(), dtype, {n, k})
                                      : loom::Tensor::contiguous(b.data(), dtype, {k, n});
  const loom::Tensor cv = loom::Tensor::contiguous(c.data(), loom::DType::f32, {m, n});
  const loom_bench::Throughput clock;
  for (auto _ : state) backend().gemm(av, false, bv, transpose_b, cv, 1.0f, 0.0f);
  set_flops(state, clock, 2.0 * m * n * k);
}

/// oneDNN matmul with plain row-major operands (dt = f32 or bf16), or with the weights
/// pre-reordered into the `any` (blocked) layout oneDNN prefers; the reorder is not timed.
void BM_OneDnnMatmul(benchmark::State& state) {
  const int64_t m = kTokens, k = state.range(0), n = state.range(1);
  const bool bf16 = state.range(2) != 0, any_layout = state.range(3) != 0;
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  const dt type = bf16 ? dt::bf16 : dt::f32;
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  const dnnl::memory::desc a_md({m, k}, type, tag::ab), b_plain({k, n}, type, tag::ab),
      c_md({m, n}, dt::f32, tag::ab);
  const dnnl::memory::desc b_md = any_layout ? dnnl::memory::desc({k, n}, type, tag::any) : b_plain;
  const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), engine);
  dnnl::memory a(a_md, engine), b_src(b_plain, engine), c(c_md, engine);
  dnnl::memory b(pd.weights_desc(), engine);
  dnnl::reorder(b_src, b).execute(stream, b_src, b);
  const dnnl::matmul primitive(pd);
  const loom_bench::Throughput clock;
  for (auto _ : state) {
    primitive.execute(stream, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
    stream.wait();
  }
  set_flops(state, clock, 2.0 * m * n * k);
}

/// Attention scores for B = 32 sequences, 12 heads, T = 128, D = 64 on per-head views of a fused
/// QKV buffer (strided batch, no copies) — the small GEMMs the strided batch exists for.
template <typename E>
void BM_AttentionScores(benchmark::State& state) {
  const int64_t B = 32, H = 12, T = 128, D = 64;
  auto qkv = filled<E>(B * T * 3 * H * D, 0.01f);
  std::vector<float> scores(B * H * T * T);
  const loom::Tensor fused = loom::Tensor::contiguous(qkv.data(), loom::dtype_of<E>(), {B, T, 3, H, D});
  const loom::Tensor q = fused.select(2, 0).permute({0, 2, 1, 3}),
                     k = fused.select(2, 1).permute({0, 2, 1, 3});
  const loom::Tensor s = loom::Tensor::contiguous(scores.data(), loom::DType::f32, {B, H, T, T});
  const loom_bench::Throughput clock;
  for (auto _ : state) backend().gemm(q, false, k, true, s, 0.125f, 0.0f);
  set_flops(state, clock, 2.0 * B * H * T * T * D);
}

void gemm_shapes(benchmark::internal::Benchmark* b, std::initializer_list<int64_t> extra) {
  for (const auto& shape : kShapes) {
    std::vector<int64_t> args = shape;
    args.insert(args.end(), extra);
    b->Args(args);
  }
  b->Unit(benchmark::kMillisecond)->MinTime(0.3)->UseRealTime();
}

BENCHMARK(BM_BackendGemm<float>)->Apply([](auto* b) { gemm_shapes(b, {0}); });
BENCHMARK(BM_BackendGemm<float>)->Name("BM_BackendGemm<float>/xWt")->Apply([](auto* b) {
  gemm_shapes(b, {1});
});
BENCHMARK(BM_BackendGemm<loom::BFloat16>)->Apply([](auto* b) { gemm_shapes(b, {0}); });
BENCHMARK(BM_BackendGemm<loom::BFloat16>)->Name("BM_BackendGemm<bf16>/xWt")->Apply([](auto* b) {
  gemm_shapes(b, {1});
});
BENCHMARK(BM_OneDnnMatmul)->Name("BM_OneDnnMatmul/f32")->Apply([](auto* b) { gemm_shapes(b, {0, 0}); });
BENCHMARK(BM_OneDnnMatmul)->Name("BM_OneDnnMatmul/bf16_any")->Apply([](auto* b) { gemm_shapes(b, {1, 1}); });
BENCHMARK(BM_AttentionScores<float>)->Unit(benchmark::kMillisecond)->MinTime(0.3)->UseRealTime();
BENCHMARK(BM_AttentionScores<loom::BFloat16>)->Unit(benchmark::kMillisecond)->MinTime(0.3)->UseRealTime();

}  // namespace
