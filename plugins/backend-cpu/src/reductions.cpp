// Sums of squares per segment, the global norm, and the non-finite check.
//
// Sums run in f64 over fixed chunks whose partial sums are added in order: the result does not
// depend on the thread count (LAMB trust ratios and gradient clipping stay reproducible).
#include <cmath>

#include "cpu_backend.hpp"
#include "float_storage.hpp"
#include "loom_backend/op_contracts.hpp"
#include "op_preamble.hpp"

namespace loom_cpu {
namespace {

/// Σ x[i]² over [begin, end) in f64, deterministic for any thread count.
double sum_of_squares(const float* x, int64_t begin, int64_t end, int threads) {
  constexpr int64_t kMaxChunks = 256;
  constexpr int64_t kMinChunk = 16384;
  const int64_t n = end - begin;
  if (n <= 0) return 0.0;
  int64_t chunk = (n + kMaxChunks - 1) / kMaxChunks;
  if (chunk < kMinChunk) chunk = kMinChunk;
  const int64_t chunks = (n + chunk - 1) / chunk;
  double partial[kMaxChunks] = {};
#pragma omp parallel for num_threads(threads) schedule(static) if (chunks > 1)
  for (int64_t k = 0; k < chunks; ++k) {
    const int64_t lo = begin + k * chunk, hi = lo + chunk < end ? lo + chunk : end;
    double sum = 0.0;
#pragma omp simd reduction(+ : sum)
    for (int64_t i = lo; i < hi; ++i) sum += static_cast<double>(x[i]) * static_cast<double>(x[i]);
    partial[k] = sum;
  }
  double total = 0.0;
  for (int64_t k = 0; k < chunks; ++k) total += partial[k];
  return total;
}

template <typename S>
bool all_finite(const S* x, int64_t n, int threads) {
  int bad = 0;
#pragma omp parallel for simd num_threads(threads) schedule(static) reduction(| : bad) if (n > 65536)
  for (int64_t i = 0; i < n; ++i) {
    const float v = load(x, i);
    bad |= (v - v != 0.0f) ? 1 : 0;  // NaN and ±inf give NaN
  }
  return bad == 0;
}

}  // namespace

void CpuBackend::sum_squares(const loom::Tensor& x, const int64_t* segment_offsets, size_t num_segments,
                             const loom::Tensor& out) {
  const auto check = checks("sum_squares");
  loom_backend::check_sum_squares(check, x, segment_offsets, num_segments, out);
  const float* xs = static_cast<const float*>(x.data);
  float* o = static_cast<float*>(out.data);
  for (size_t s = 0; s < num_segments; ++s)
    o[s] = static_cast<float>(sum_of_squares(xs, segment_offsets[s], segment_offsets[s + 1], threads_));
}

void CpuBackend::global_norm(const loom::Tensor& x, const loom::Tensor& out) {
  const auto check = checks("global_norm");
  loom_backend::check_global_norm(check, x, out);
  *static_cast<float*>(out.data) = static_cast<float>(
      std::sqrt(sum_of_squares(static_cast<const float*>(x.data), 0, x.numel(), threads_)));
}

void CpuBackend::check_finite(const loom::Tensor& x, const loom::Tensor& flag) {
  run_op(
      "check_finite",
      [&](const ArgumentChecks& check) {
        loom_backend::check_finite_flag(check, x, flag);
        return x.numel();
      },
      {x.dtype},
      [&](int64_t n, auto t) {
        if (!all_finite(static_cast<const decltype(t)*>(x.data), n, threads_))
          *static_cast<int32_t*>(flag.data) = 1;
      });
}

}  // namespace loom_cpu
