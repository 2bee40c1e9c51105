// Throughput of one BERT encoder layer, forward + backward, at BERT-base shapes (H 768, 12 heads,
// I 3072) on backend/cpu, in f32 and bf16 compute, against the GEMM ceiling measured in the same
// process (one large linear-layer GEMM, 4096×768 · 768×3072), with the separate ops of
// loom::Backend only (layout:0), with the backend's named interfaces (layout:1: the fused add &
// norm of ResidualLayerNorm), and with those and the parameters in flat buffers as `loom run` lays
// them out (layout:2: Q, K and V as one GEMM). Results: docs/performance.md.
//
//   build/bin/loom_bert_bench [--benchmark_filter=...]      (LOOM_BENCH_THREADS, default 2)
//
// Rates are per CPU-second of the whole process (MeasureProcessCPUTime), so they stay meaningful
// on a machine shared with other work.
//
// FLOPs counted (the model FLOPs, not the implementation's): forward = 2·N·(4H² + 2HI) for the
// six linear layers + 4·B·T²·H for QKᵀ and PV; backward = 2 × forward.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <random>
#include <vector>

#include "loom/sdk/backend.hpp"
#include "loom/sdk/block.hpp"
#include "loom/sdk/component_kind.hpp"
#include "model/batch_staging.hpp"
#include "plugin_loading/plugin_registry.hpp"

namespace {

using loom::host::Component;
using loom::host::ComponentConfig;

int bench_threads() {
  const char* text = std::getenv("LOOM_BENCH_THREADS");
  return text != nullptr ? std::atoi(text) : 2;
}

const loom::host::PluginRegistry& registry() {
  static const loom::host::PluginRegistry instance([] {
    loom::host::PluginSearchOptions options;
    options.directories = {LOOM_PLUGIN_DIR};
    options.default_paths = false;
    return options;
  }());
  return instance;
}

const Component<loom::Backend>& backend_component() {
  static Component<loom::Backend> cpu = [] {
    ComponentConfig config;
    config.table_name = "backend";
    config.toml = "threads = " + std::to_string(bench_threads()) + "\n";
    return registry().create<loom::Backend>(*registry().find(LOOM_KIND_BACKEND, "cpu"), config, false);
  }();
  return cpu;
}
loom::Backend& backend() {
  return *backend_component().get();
}

loom::Buffer random_buffer(size_t floats, float scale, std::mt19937& rng) {
  loom::Buffer buffer(backend(), floats * 4);
  std::normal_distribution<float> normal(0.0f, scale);
  auto* data = static_cast<float*>(buffer.data());
  for (size_t i = 0; i < floats; ++i) data[i] = normal(rng);
  return buffer;
}

// One GEMM y[N, 3072] = x[N, 768]·W[3072, 768]ᵀ: the ceiling the layer is measured against.
void BM_GemmCeiling(benchmark::State& state) {
  const loom::DType dtype = state.range(0) == 0 ? loom::DType::f32 : loom::DType::bf16;
  const int64_t N = 4096, K = 768, M = 3072;
  std::mt19937 rng(1);
  loom::Buffer x = random_buffer(static_cast<size_t>(N * K), 1.0f, rng);
  loom::Buffer w = random_buffer(static_cast<size_t>(M * K), 0.02f, rng);
  loom::Buffer y(backend(), static_cast<size_t>(N * M) * 4);
  loom::Buffer xb(backend(), static_cast<size_t>(N * K) * 2), wb(backend(), static_cast<size_t>(M * K) * 2);
  loom::Tensor xt = x.view(loom::DType::f32, {N, K}), wt = w.view(loom::DType::f32, {M, K});
  if (dtype == loom::DType::bf16) {
    backend().cast(xt, xb.view(loom::DType::bf16, {N, K}));
    backend().cast(wt, wb.view(loom::DType::bf16, {M, K}));
    xt = xb.view(loom::DType::bf16, {N, K});
    wt = wb.view(loom::DType::bf16, {M, K});
  }
  for (auto _ : state) {
    backend().gemm(xt, false, wt, true, y.view(loom::DType::f32, {N, M}), 1.0f, 0.0f);
    backend().synchronize();
  }
  state.counters["GFLOP/s"] = benchmark::Counter(
      2.0 * N * M * K, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
  state.SetLabel(loom::dtype_name(dtype));
}

void BM_EncoderLayerForwardBackward(benchmark::State& state) {
  const int64_t B = state.range(0), T = state.range(1);
  const loom::DType dtype = state.range(2) == 0 ? loom::DType::f32 : loom::DType::bf16;
  loom::ModelConfig config = loom::default_model_config();
  ComponentConfig options;
  options.table_name = "model";
  Component<loom::Block> layer =
      registry().create<loom::Block>(*registry().find(LOOM_KIND_BLOCK, "bert.encoder-layer"), options, false);
  // Argument 3 (layout): 0 the separate ops of loom::Backend only, a buffer per parameter; 1 the
  // backend's named interfaces too (ResidualLayerNorm; fused attention stays off, the backend's
  // default); 2 as 1 with the parameters in flat buffers, as `loom run` has them (Q, K and V
  // projected by one GEMM).
  const bool named_interfaces = state.range(3) != 0;
  layer.get()->setup(loom::BlockSetup{&config, &backend(), dtype, 1, nullptr,
                                      named_interfaces ? backend_component().interfaces() : nullptr, nullptr,
                                      nullptr});

  std::mt19937 rng(2);
  // Parameter storage: a buffer per parameter and view, or (flat) one buffer per view kind with
  // the parameters at 16-float-aligned offsets in declaration order, as `loom run` lays them out.
  const bool flat = state.range(3) == 2;
  std::vector<size_t> offsets;
  size_t total = 0;
  for (size_t i = 0; i < layer.get()->parameter_count(); ++i) {
    const loom::ParameterSpec s = layer.get()->parameter(i);
    size_t n = 1;
    for (int k = 0; k < s.ndim; ++k) n *= static_cast<size_t>(s.shape[k]);
    offsets.push_back(flat ? total : 0);
    total = (total + n + 15) / 16 * 16;
  }
  std::vector<loom::Buffer> buffers;
  std::vector<loom::ParameterView> views;
  if (flat) {
    buffers.push_back(random_buffer(total, 0.02f, rng));
    buffers.emplace_back(backend(), total * 4);
    buffers.emplace_back(backend(), total * 2);
  }
  for (size_t i = 0; i < layer.get()->parameter_count(); ++i) {
    const loom::ParameterSpec s = layer.get()->parameter(i);
    size_t n = 1;
    for (int k = 0; k < s.ndim; ++k) n *= static_cast<size_t>(s.shape[k]);
    if (!flat) {
      buffers.push_back(random_buffer(n, 0.02f, rng));
      buffers.emplace_back(backend(), n * 4);
      buffers.emplace_back(backend(), n * 2);
    }
    const size_t first = buffers.size() - 3;
    loom::ParameterView v;
    v.master = loom::Tensor::contiguous(static_cast<float*>(buffers[first].data()) + offsets[i], loom::DType::f32,
                                        s.shape, s.ndim);
    v.grad = loom::Tensor::contiguous(static_cast<float*>(buffers[first + 1].data()) + offsets[i],
                                      loom::DType::f32, s.shape, s.ndim);
    v.compute = v.master;
    if (dtype == loom::DType::bf16) {
      v.compute = loom::Tensor::contiguous(static_cast<char*>(buffers[first + 2].data()) + 2 * offsets[i],
                                           loom::DType::bf16, s.shape, s.ndim);
      backend().cast(v.master, v.compute);
    }
    views.push_back(v);
  }
  layer.get()->bind_parameters(views.data(), views.size());

  std::vector<int32_t> ids(static_cast<size_t>(B * T), 1), mask(static_cast<size_t>(B * T), 1);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = T - (b % 4) * 8; t < T; ++t) mask[static_cast<size_t>(b * T + t)] = 0;  // some padding
  loom::host::HostBatch host_batch;
  host_batch.batch = B;
  host_batch.seq = T;
  host_batch.input_ids = ids.data();
  host_batch.attention_mask = mask.data();
  const loom::ActivationShape shape{B, T, 0};
  loom::host::BatchStaging staging(backend(), shape);
  const loom::BatchView& batch = staging.upload(host_batch);
  const loom::ActivationBytes bytes = layer.get()->activation_bytes(shape);
  loom::Buffer saved(backend(), bytes.saved), scratch(backend(), bytes.scratch);
  const int64_t H = config.hidden_size, I = config.intermediate_size;
  loom::Buffer x = random_buffer(static_cast<size_t>(B * T * H), 1.0f, rng);
  loom::Buffer y(backend(), static_cast<size_t>(B * T * H) * 4),
      dx(backend(), static_cast<size_t>(B * T * H) * 4);
  loom::Buffer dy = random_buffer(static_cast<size_t>(B * T * H), 1.0f, rng);
  const loom::StepArgs args{&batch, saved.data(), saved.bytes(), scratch.data(), scratch.bytes(),
                            1,      99,           1.0f};
  for (auto _ : state) {
    layer.get()->forward(args, x.view(loom::DType::f32, {B, T, H}), y.view(loom::DType::f32, {B, T, H}));
    layer.get()->backward(args, dy.view(loom::DType::f32, {B, T, H}), dx.view(loom::DType::f32, {B, T, H}));
    backend().synchronize();
  }
  const double N = static_cast<double>(B * T);
  const double forward = 2.0 * N * (4.0 * H * H + 2.0 * H * I) + 4.0 * B * T * T * static_cast<double>(H);
  state.counters["GFLOP/s"] = benchmark::Counter(3.0 * forward, benchmark::Counter::kIsIterationInvariantRate,
                                                 benchmark::Counter::kIs1000);
  state.counters["tokens/s"] = benchmark::Counter(N, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["arena_MB"] = static_cast<double>(bytes.saved + bytes.scratch) / 1e6;
  state.SetLabel(loom::dtype_name(dtype));
}

// Process CPU time: on a shared machine the rate per CPU-second is what carries over.
BENCHMARK(BM_GemmCeiling)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->MeasureProcessCPUTime();
BENCHMARK(BM_EncoderLayerForwardBackward)
    ->ArgNames({"batch", "seq", "bf16", "layout"})
    ->Args({8, 128, 0, 0})
    ->Args({8, 128, 0, 1})
    ->Args({8, 128, 0, 2})
    ->Args({8, 128, 1, 0})
    ->Args({8, 128, 1, 1})
    ->Args({8, 128, 1, 2})
    ->Args({32, 128, 0, 0})
    ->Args({32, 128, 0, 1})
    ->Args({32, 128, 0, 2})
    ->Args({32, 128, 1, 0})
    ->Args({32, 128, 1, 1})
    ->Args({32, 128, 1, 2})
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime()
    ->MinTime(2.0);

}  // namespace

BENCHMARK_MAIN();
