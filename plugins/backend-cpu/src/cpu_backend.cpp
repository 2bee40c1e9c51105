// CpuBackend construction, options and memory (aligned host allocations, plain memcpy copies, timed
// as upload and download while profiling).
#include "cpu_backend.hpp"

#include <omp.h>
#include <sched.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>

#include "onednn_gemm.hpp"

namespace loom_cpu {

int available_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    const int count = CPU_COUNT(&set);
    if (count > 0) return count;
  }
  return omp_get_num_procs() > 0 ? omp_get_num_procs() : 1;
}

namespace {
int read_threads(loom::ComponentContext& context) {
  const int cores = available_cores();
  const auto threads = context.options().get<int64_t>("threads", 0, loom::Range{0, 4096});
  if (threads > cores)
    context.log(loom::LogLevel::warn, "threads = " + std::to_string(threads) + " exceeds the " +
                                          std::to_string(cores) +
                                          " cores available; expect oversubscription");
  return threads == 0 ? cores : static_cast<int>(threads);
}
}  // namespace

CpuBackend::CpuBackend(loom::ComponentContext& context)
    : CpuBackend(read_threads(context), context.options().get<bool>("fused_attention", false)) {}

CpuBackend::CpuBackend(int threads, bool fused_attention)
    : threads_(threads > 0 ? threads : available_cores()),
      fused_attention_(fused_attention),
      gemm_(std::make_unique<OneDnnGemm>(threads_)) {}

CpuBackend::~CpuBackend() = default;

loom::DeviceInfo CpuBackend::device_info() const {
  loom::DeviceInfo info{};
  std::snprintf(info.name, sizeof info.name, "CPU");
  info.multiprocessors = threads_;
  info.peak_allocated_bytes = ledger_.usage().peak_allocated;
  return info;
}

void* CpuBackend::allocate(size_t bytes) {
  if (bytes == 0) return nullptr;
  const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* data = std::aligned_alloc(kAlignment, rounded);
  if (data == nullptr) throw std::bad_alloc();
  ledger_.add(data, bytes, rounded);
  return data;
}

void CpuBackend::deallocate(void* data) {
  ledger_.remove(data);
  std::free(data);
}

void CpuBackend::copy_from_host(void* device_dst, const void* host_src, size_t bytes) {
  const loom_backend::OpTimingScope timed(timing_, "copy_from_host");
  if (bytes != 0) std::memcpy(device_dst, host_src, bytes);
}

void CpuBackend::copy_to_host(void* host_dst, const void* device_src, size_t bytes) {
  const loom_backend::OpTimingScope timed(timing_, "copy_to_host");
  if (bytes != 0) std::memcpy(host_dst, device_src, bytes);
}

}  // namespace loom_cpu
