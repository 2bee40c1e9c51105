// Dropout with the counter-based Philox4x32-10 stream of loom/sdk/philox.hpp.
//
// Element e of the view uses word (offset + e) of the stream keyed by seed; the mask is never
// stored and backward regenerates it. Work is split into fixed chunks, each regenerating its own
// Philox blocks, so the output is the same for every thread count.
#include "argument_checks.hpp"
#include "cpu_backend.hpp"
#include "float_storage.hpp"
#include "loom/sdk/philox.hpp"

namespace loom_cpu {
namespace {

template <typename SI, typename SO>
void dropout_apply(const SI* in, SO* out, int64_t n, float p, uint64_t seed, uint64_t offset, int threads) {
  const uint32_t threshold = loom::dropout_threshold(p);
  const float scale = 1.0f / (1.0f - p);
  constexpr int64_t kChunk = 4096;
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for num_threads(threads) schedule(static) if (chunks > 1)
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    const int64_t end = chunk * kChunk + kChunk < n ? chunk * kChunk + kChunk : n;
    uint64_t cached_block = ~uint64_t{0};
    loom::Philox4x32 words{};
    for (int64_t e = chunk * kChunk; e < end; ++e) {
      const uint64_t index = offset + static_cast<uint64_t>(e);
      const uint64_t block = index >> 2;
      if (block != cached_block) {
        words = loom::philox4x32_10(
            loom::Philox4x32{{static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32), 0u, 0u}},
            seed);
        cached_block = block;
      }
      const bool keep = words.word[index & 3u] >= threshold;
      store(out, e, keep ? load(in, e) * scale : 0.0f);
    }
  }
}

void check_probability(const ArgumentChecks& check, float p) {
  check.require(p >= 0.0f && p < 1.0f, "drop probability " + std::to_string(p) + " is outside [0, 1)");
}

}  // namespace

void CpuBackend::dropout_forward(const loom::Tensor& x, const loom::Tensor& y, float p, uint64_t seed,
                                 uint64_t offset) {
  const ArgumentChecks check("dropout_forward");
  check.tensor("x", x, {DType::f32, DType::bf16});
  check.tensor("y", y, {DType::f32, DType::bf16});
  check.same_shape("x", x, "y", y);
  check.require(x.data != y.data || x.dtype == y.dtype, "y may alias x only with the same dtype");
  check_probability(check, p);
  with_float_storage(x.dtype, "dropout_forward", [&](auto xt) {
    with_float_storage(y.dtype, "dropout_forward", [&](auto yt) {
      using SI = decltype(xt);
      using SO = decltype(yt);
      dropout_apply(static_cast<const SI*>(x.data), static_cast<SO*>(y.data), x.numel(), p, seed, offset,
                    threads_);
    });
  });
}

void CpuBackend::dropout_backward(const loom::Tensor& dy, const loom::Tensor& dx, float p, uint64_t seed,
                                  uint64_t offset) {
  const ArgumentChecks check("dropout_backward");
  check.tensor("dy", dy, {DType::f32});
  check.tensor("dx", dx, {DType::f32});
  check.same_shape("dy", dy, "dx", dx);
  check_probability(check, p);
  dropout_apply(static_cast<const float*>(dy.data), static_cast<float*>(dx.data), dy.numel(), p, seed, offset,
                threads_);
}

}  // namespace loom_cpu
