// Dropout with the counter-based Philox4x32-10 stream of loom/sdk/philox.hpp.
//
// Element e of the view uses word (offset + e) of the stream keyed by seed; the mask is never
// stored and backward regenerates it. Work is split into fixed chunks, each regenerating its own
// Philox blocks, so the output is the same for every thread count.
#include "cpu_backend.hpp"
#include "float_storage.hpp"
#include "loom/sdk/philox.hpp"
#include "loom_backend/op_contracts.hpp"
#include "op_preamble.hpp"
#include "philox_words.hpp"

namespace loom_cpu {
namespace {

constexpr int64_t kChunk = 4096;  // elements per task; a chunk spans at most kChunk / 4 + 1 blocks

template <typename SI, typename SO>
void dropout_apply(const SI* in, SO* out, int64_t n, float p, uint64_t seed, uint64_t offset, int threads) {
  const uint32_t threshold = loom::dropout_threshold(p);
  const float scale = 1.0f / (1.0f - p);
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for num_threads(threads) schedule(static) if (chunks > 1)
  for (int64_t chunk = 0; chunk < chunks; ++chunk) {
    const int64_t begin = chunk * kChunk, end = begin + kChunk < n ? begin + kChunk : n;
    const uint64_t first = offset + static_cast<uint64_t>(begin),
                   last = offset + static_cast<uint64_t>(end - 1);
    const uint64_t first_block = first >> 2;
    alignas(64) uint32_t words[4 * (kChunk / 4 + 1)];
    philox_blocks(first_block, static_cast<int64_t>((last >> 2) - first_block + 1), seed, words);
    const int64_t skip = static_cast<int64_t>(first & 3u);  // words of the first block before `first`
#pragma omp simd
    for (int64_t i = 0; i < end - begin; ++i)
      store(out, begin + i, words[skip + i] >= threshold ? load(in, begin + i) * scale : 0.0f);
  }
}

}  // namespace

void CpuBackend::dropout_forward(const loom::Tensor& x, const loom::Tensor& y, float p, uint64_t seed,
                                 uint64_t offset) {
  run_op(
      "dropout_forward",
      [&](const ArgumentChecks& check) {
        loom_backend::check_dropout_forward(check, x, y, p);
        return x.numel();
      },
      {x.dtype, y.dtype},
      [&](int64_t n, auto xt, auto yt) {
        using SI = decltype(xt);
        using SO = decltype(yt);
        dropout_apply(static_cast<const SI*>(x.data), static_cast<SO*>(y.data), n, p, seed, offset, threads_);
      });
}

void CpuBackend::dropout_backward(const loom::Tensor& dy, const loom::Tensor& dx, float p, uint64_t seed,
                                  uint64_t offset) {
  run_op(
      "dropout_backward",
      [&](const ArgumentChecks& check) {
        loom_backend::check_dropout_backward(check, dy, dx, p);
        return dy.numel();
      },
      [&](int64_t n) {
        dropout_apply(static_cast<const float*>(dy.data), static_cast<float*>(dx.data), n, p, seed, offset,
                      threads_);
      });
}

}  // namespace loom_cpu
