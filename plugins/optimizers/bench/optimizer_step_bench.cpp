// One optimizer step over bert-base (110M parameters, the real Hugging Face segment table) through
// the plugin, reported in GB/s of memory traffic, next to a STREAM-style triad that measures what
// the machine's memory delivers. Run: build/bin/loom_optimizer_step_bench (docs/performance.md).
//
// Traffic per parameter (fp32): nvlamb 44 B (norm pass 4; stage 1 reads g m v w, writes m v: 24;
// stage 2 reads m v w, writes w: 16), adamw 28 B (one pass: reads g m v w, writes m v w),
// sgd with momentum 20 B (reads g b w, writes b w). Triad a = b + s·c: 12 B per element.
#include <benchmark/benchmark.h>

#include <time.h>

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "plugin_loading/plugin_registry.hpp"
#include "loom/sdk/optimizer.hpp"

namespace {

struct BertBaseLayout {
  std::vector<std::string> names;
  std::vector<loom::ParameterSegment> segments;
  size_t total = 0;

  void add(const std::string& name, size_t count) {
    names.push_back(name);
    segments.push_back({nullptr, total, count, loom::DecayRule::by_name});
    total += count;
  }

  BertBaseLayout() {
    const size_t hidden = 768, intermediate = 3072, vocab = 30522, positions = 512, layers = 12;
    add("bert.embeddings.word_embeddings.weight", vocab * hidden);
    add("bert.embeddings.position_embeddings.weight", positions * hidden);
    add("bert.embeddings.token_type_embeddings.weight", 2 * hidden);
    add("bert.embeddings.LayerNorm.weight", hidden);
    add("bert.embeddings.LayerNorm.bias", hidden);
    for (size_t l = 0; l < layers; ++l) {
      const std::string p = "bert.encoder.layer." + std::to_string(l) + ".";
      for (const char* m :
           {"attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"}) {
        add(p + m + ".weight", hidden * hidden);
        add(p + m + ".bias", hidden);
      }
      add(p + "attention.output.LayerNorm.weight", hidden);
      add(p + "attention.output.LayerNorm.bias", hidden);
      add(p + "intermediate.dense.weight", intermediate * hidden);
      add(p + "intermediate.dense.bias", intermediate);
      add(p + "output.dense.weight", hidden * intermediate);
      add(p + "output.dense.bias", hidden);
      add(p + "output.LayerNorm.weight", hidden);
      add(p + "output.LayerNorm.bias", hidden);
    }
    add("bert.pooler.dense.weight", hidden * hidden);
    add("bert.pooler.dense.bias", hidden);
    add("cls.predictions.transform.dense.weight", hidden * hidden);
    add("cls.predictions.transform.dense.bias", hidden);
    add("cls.predictions.transform.LayerNorm.weight", hidden);
    add("cls.predictions.transform.LayerNorm.bias", hidden);
    add("cls.predictions.bias", vocab);
    add("cls.seq_relationship.weight", 2 * hidden);
    add("cls.seq_relationship.bias", 2);
    for (size_t i = 0; i < segments.size(); ++i) segments[i].name = names[i].c_str();
  }
};

// CPU seconds of the whole process (every thread): on a shared machine the real-time rate
// measures the neighbours as much as the code; bytes per CPU-second does not.
double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

void report_traffic(benchmark::State& state, double bytes_per_iteration, double cpu_seconds) {
  const double bytes = bytes_per_iteration * static_cast<double>(state.iterations());
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.counters["GB_per_cpu_s"] = bytes / cpu_seconds / 1e9;
}

const BertBaseLayout& layout() {
  static const BertBaseLayout instance;
  return instance;
}

loom::host::Component<loom::Optimizer> make_optimizer(const std::string& name, const std::string& toml) {
  loom::host::PluginSearchOptions search;
  search.directories = {LOOM_PLUGIN_DIR};
  search.default_paths = false;
  search.environment = false;
  loom::host::PluginRegistry registry(search);
  const auto* entry = registry.find(LOOM_KIND_OPTIMIZER, name);
  if (entry == nullptr) throw std::runtime_error("optimizer/" + name + " not found in " LOOM_PLUGIN_DIR);
  return registry.create<loom::Optimizer>(*entry, {"optimizer", toml, "", "bench:1:1"}, false);
}

void optimizer_step(benchmark::State& state, const std::string& name, const std::string& options,
                    double bytes_per_parameter) {
  const BertBaseLayout& l = layout();
  const int threads = static_cast<int>(state.range(0));
  auto optimizer = make_optimizer(name, options + "threads = " + std::to_string(threads) + "\n");
  loom::Optimizer& o = *optimizer.get();
  o.setup(l.segments.data(), l.segments.size(), l.total);
  std::vector<float> params(l.total), grads(l.total);
  for (size_t i = 0; i < l.total; ++i) {
    params[i] = 0.02f * static_cast<float>(static_cast<int>(i % 2001) - 1000) / 1000.0f;
    grads[i] = 1e-4f * static_cast<float>(static_cast<int>((i * 7919) % 2003) - 1001) / 1001.0f;
  }
  o.step(params.data(), grads.data(), {1e-3, 1.0});  // first touch of the state tensors
  const double cpu_start = process_cpu_seconds();
  for (auto _ : state) {
    const auto result = o.step(params.data(), grads.data(), {1e-3, 1.0});
    benchmark::DoNotOptimize(result.grad_norm);
  }
  state.counters["params"] = static_cast<double>(l.total);
  report_traffic(state, bytes_per_parameter * static_cast<double>(l.total),
                 process_cpu_seconds() - cpu_start);
}

// STREAM triad on arrays the size of the parameter buffer, split over `threads` like the optimizer.
void memory_triad(benchmark::State& state) {
  const size_t n = layout().total;
  const int threads = static_cast<int>(state.range(0));
  std::vector<float> a(n, 0.0f), b(n, 1.0f), c(n, 2.0f);
  auto part = [&](int t) {
    const size_t begin = n * t / threads, end = n * (t + 1) / threads;
    float* __restrict pa = a.data();
    const float* __restrict pb = b.data();
    const float* __restrict pc = c.data();
    for (size_t i = begin; i < end; ++i) pa[i] = pb[i] + 0.5f * pc[i];
  };
  const double cpu_start = process_cpu_seconds();
  for (auto _ : state) {
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(part, t);
    part(0);
    for (auto& t : pool) t.join();
    benchmark::DoNotOptimize(a.data());
  }
  report_traffic(state, 12.0 * static_cast<double>(n), process_cpu_seconds() - cpu_start);
}

BENCHMARK(memory_triad)->Arg(1)->Arg(2)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_CAPTURE(optimizer_step, nvlamb, "nvlamb", "", 44.0)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(optimizer_step, adamw, "adamw", "", 28.0)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_CAPTURE(optimizer_step, sgd_momentum, "sgd", "momentum = 0.9\n", 20.0)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
