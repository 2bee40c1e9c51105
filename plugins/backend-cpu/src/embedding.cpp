// Embedding gather (forward, also any row gather) and scatter-add (backward).
//
// Scatter-add is parallel over blocks of columns; each block walks the rows in order, so repeated
// ids accumulate in a fixed order whatever the thread count: loom_backend::kScatterAddChunkRows's
// (an id's first rows added one by one, its later rows in runs summed from zero, each run's sum
// added in turn), which backend/cuda follows too.
#include <vector>

#include "cpu_backend.hpp"
#include "loom_backend/index_errors.hpp"
#include "loom_backend/op_contracts.hpp"
#include "op_preamble.hpp"

namespace loom_cpu {
namespace {

int64_t id_at(const loom::Tensor& ids, int64_t i) {
  return ids.dtype == DType::i32 ? static_cast<const int32_t*>(ids.data)[i]
                                 : static_cast<const int64_t*>(ids.data)[i];
}

/// Checks every id once (cheap next to the rows it moves) so a bad id is an error, not a crash;
/// returns the contract's rows. The ids are in host memory here, so this goes with the contract.
loom_backend::EmbeddingRows check_ids(const ArgumentChecks& check, const loom::Tensor& ids,
                                      const loom_backend::EmbeddingRows& shape) {
  const int64_t n = ids.numel(), vocab = shape.vocab;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t id = id_at(ids, i);
    if (id < 0 || id >= vocab) check.fail(loom_backend::id_out_of_range(i, id, vocab));
  }
  return shape;
}

}  // namespace

void CpuBackend::embedding_gather(const loom::Tensor& table, const loom::Tensor& ids, const loom::Tensor& out,
                                  bool accumulate) {
  run_op(
      "embedding_gather",
      [&](const ArgumentChecks& check) {
        return check_ids(check, ids, loom_backend::check_embedding_gather(check, table, ids, out));
      },
      [&](const loom_backend::EmbeddingRows& shape) {
        const int64_t n = shape.ids, cols = shape.cols;
        const float* t = static_cast<const float*>(table.data);
        float* o = static_cast<float*>(out.data);
#pragma omp parallel for num_threads(threads_) schedule(static) if (n * cols > 32768)
        for (int64_t i = 0; i < n; ++i) {
          const float* src = t + id_at(ids, i) * cols;
          float* dst = o + i * cols;
          if (accumulate) {
#pragma omp simd
            for (int64_t c = 0; c < cols; ++c) dst[c] += src[c];
          } else {
#pragma omp simd
            for (int64_t c = 0; c < cols; ++c) dst[c] = src[c];
          }
        }
      });
}

void CpuBackend::embedding_scatter_add(const loom::Tensor& dout, const loom::Tensor& ids,
                                       const loom::Tensor& dtable) {
  run_op(
      "embedding_scatter_add",
      [&](const ArgumentChecks& check) {
        return check_ids(check, ids, loom_backend::check_embedding_scatter_add(check, dout, ids, dtable));
      },
      [&](const loom_backend::EmbeddingRows& shape) {
        const int64_t n = shape.ids, cols = shape.cols, vocab = shape.vocab;
        constexpr int64_t R = loom_backend::kScatterAddChunkRows;
        const float* g = static_cast<const float*>(dout.data);
        float* d = static_cast<float*>(dtable.data);
        // Each row's occurrence number among its id's rows, each id's row count, and a run slot for
        // the ids with more than R rows.
        std::vector<int64_t> occurrence(static_cast<size_t>(n)), count(static_cast<size_t>(vocab), 0);
        for (int64_t i = 0; i < n; ++i) occurrence[i] = count[id_at(ids, i)]++;
        std::vector<int32_t> slot(static_cast<size_t>(vocab), -1);
        int32_t slots = 0;
        for (int64_t id = 0; id < vocab; ++id)
          if (count[id] > R) slot[id] = slots++;
        constexpr int64_t kBlock = 64;
        const int64_t blocks = (cols + kBlock - 1) / kBlock;
#pragma omp parallel for num_threads(threads_) schedule(static) if (n * cols > 32768)
        for (int64_t block = 0; block < blocks; ++block) {
          const int64_t begin = block * kBlock;
          const int64_t width = cols - begin < kBlock ? cols - begin : kBlock;
          std::vector<float> runs(static_cast<size_t>(slots) * kBlock);  // each long id's open run
          for (int64_t i = 0; i < n; ++i) {
            const int64_t id = id_at(ids, i), o = occurrence[i];
            const float* src = g + i * cols + begin;
            float* dst = d + id * cols + begin;
            if (o < R) {
#pragma omp simd
              for (int64_t c = 0; c < width; ++c) dst[c] += src[c];
              continue;
            }
            float* run = runs.data() + static_cast<size_t>(slot[id]) * kBlock;
            if (o % R == 0)
              for (int64_t c = 0; c < width; ++c) run[c] = 0.0f;
#pragma omp simd
            for (int64_t c = 0; c < width; ++c) run[c] += src[c];
            if (o % R == R - 1 || o == count[id] - 1)
#pragma omp simd
              for (int64_t c = 0; c < width; ++c) dst[c] += run[c];
          }
        }
      });
}

}  // namespace loom_cpu
