// Throughput counters for the backend benchmarks, by wall clock and by process CPU time.
//
// The development machines are shared: wall-clock rates drop whenever other jobs run. The
// per-core rate (work / process CPU seconds) is far less sensitive to that, so both are reported:
// "<unit>/s" by wall clock for all threads, "<unit>/s/core" per CPU-second of this process.
#pragma once

#include <benchmark/benchmark.h>
#include <time.h>

#include <cstdlib>
#include <string>

namespace loom_bench {

/// Threads for the benchmarked backend: $LOOM_BENCH_THREADS, or 0 (every core).
inline int threads_from_environment() {
  const char* value = std::getenv("LOOM_BENCH_THREADS");
  return value != nullptr ? std::atoi(value) : 0;
}

inline double process_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

/// Starts at construction; `report` sets "<unit>/s" (wall) and "<unit>/s/core" (CPU time).
class Throughput {
 public:
  Throughput() : cpu_start_(process_cpu_seconds()) {}
  void report(benchmark::State& state, const char* unit, double work_per_call) const {
    const double work = work_per_call * static_cast<double>(state.iterations());
    const double cpu = process_cpu_seconds() - cpu_start_;
    state.counters[std::string(unit) + "/s"] = benchmark::Counter(work, benchmark::Counter::kIsRate);
    state.counters[std::string(unit) + "/s/core"] = cpu > 0 ? work / cpu : 0.0;
  }

 private:
  double cpu_start_;
};

}  // namespace loom_bench
