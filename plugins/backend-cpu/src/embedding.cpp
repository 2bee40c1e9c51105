// Embedding gather (forward, also any row gather) and scatter-add (backward).
//
// Scatter-add is parallel over blocks of columns; each block walks the ids in order, so repeated
// ids accumulate in a fixed order whatever the thread count.
#include "argument_checks.hpp"
#include "cpu_backend.hpp"

namespace loom_cpu {
namespace {

int64_t id_at(const loom::Tensor& ids, int64_t i) {
  return ids.dtype == DType::i32 ? static_cast<const int32_t*>(ids.data)[i]
                                 : static_cast<const int64_t*>(ids.data)[i];
}

/// Checks every id once (cheap next to the rows it moves) so a bad id is an error, not a crash.
void check_ids(const ArgumentChecks& check, const loom::Tensor& ids, int64_t vocab) {
  const int64_t n = ids.numel();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t id = id_at(ids, i);
    if (id < 0 || id >= vocab)
      check.fail("ids[" + std::to_string(i) + "] = " + std::to_string(id) + " is outside [0, " +
                 std::to_string(vocab) + ")");
  }
}

}  // namespace

void CpuBackend::embedding_gather(const loom::Tensor& table, const loom::Tensor& ids, const loom::Tensor& out,
                                  bool accumulate) {
  const ArgumentChecks check("embedding_gather");
  check.tensor("table", table, {DType::f32});
  check.tensor("ids", ids, {DType::i32, DType::i64});
  check.tensor("out", out, {DType::f32});
  check.require(table.ndim == 2, "table " + table.describe() + " must be [V, C]");
  const int64_t cols = table.shape[1];
  check.require(out.ndim >= 1 && out.shape[out.ndim - 1] == cols,
                "out " + out.describe() + " must have " + std::to_string(cols) + " columns like table");
  const int64_t n = ids.numel();
  check.require(out.numel() == n * cols,
                "out " + out.describe() + " must have one row per id (" + std::to_string(n) + ")");
  check_ids(check, ids, table.shape[0]);
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
}

void CpuBackend::embedding_scatter_add(const loom::Tensor& dout, const loom::Tensor& ids,
                                       const loom::Tensor& dtable) {
  const ArgumentChecks check("embedding_scatter_add");
  check.tensor("dout", dout, {DType::f32});
  check.tensor("ids", ids, {DType::i32, DType::i64});
  check.tensor("dtable", dtable, {DType::f32});
  check.require(dtable.ndim == 2, "dtable " + dtable.describe() + " must be [V, C]");
  const int64_t cols = dtable.shape[1];
  check.require(dout.ndim >= 1 && dout.shape[dout.ndim - 1] == cols,
                "dout " + dout.describe() + " must have " + std::to_string(cols) + " columns like dtable");
  const int64_t n = ids.numel();
  check.require(dout.numel() == n * cols,
                "dout " + dout.describe() + " must have one row per id (" + std::to_string(n) + ")");
  check_ids(check, ids, dtable.shape[0]);
  const float* g = static_cast<const float*>(dout.data);
  float* d = static_cast<float*>(dtable.data);
  constexpr int64_t kBlock = 64;
  const int64_t blocks = (cols + kBlock - 1) / kBlock;
#pragma omp parallel for num_threads(threads_) schedule(static) if (n * cols > 32768)
  for (int64_t block = 0; block < blocks; ++block) {
    const int64_t begin = block * kBlock;
    const int64_t width = cols - begin < kBlock ? cols - begin : kBlock;
    for (int64_t i = 0; i < n; ++i) {
      const float* src = g + i * cols + begin;
      float* dst = d + id_at(ids, i) * cols + begin;
#pragma omp simd
      for (int64_t c = 0; c < width; ++c) dst[c] += src[c];
    }
  }
}

}  // namespace loom_cpu
