// Softmax cross-entropy with ignore index over gathered rows, forward and backward in one pass.
//
// Rows are independent (parallel); the mean is summed in f64 over fixed chunks of rows in order,
// so it does not depend on the thread count. dlogits may alias logits: each row is fully read
// (max, arg-max, Σexp, target logit) before it is overwritten.
#include <cmath>

#include "cpu_backend.hpp"
#include "loom_backend/index_errors.hpp"
#include "loom_backend/op_contracts.hpp"
#include "op_preamble.hpp"
#include "vector_math.hpp"

namespace loom_cpu {
namespace {

int64_t target_at(const loom::Tensor& targets, int64_t i) {
  return targets.dtype == DType::i32 ? static_cast<const int32_t*>(targets.data)[i]
                                     : static_cast<const int64_t*>(targets.data)[i];
}

/// The contract's rows, and how many of them have a target (not ignore_index).
struct CountedRows {
  loom_backend::CrossEntropyRows shape;
  int64_t counted;
};

}  // namespace

void CpuBackend::cross_entropy(const loom::Tensor& logits, const loom::Tensor& targets, int64_t num_classes,
                               int64_t ignore_index, float grad_scale, const loom::Tensor& mean_loss,
                               const loom::Tensor& dlogits, const loom::Tensor& row_loss,
                               const loom::Tensor& row_correct) {
  // The targets are in host memory here, so their range is checked with the contract.
  const auto contract = [&](const ArgumentChecks& check) {
    CountedRows checked{loom_backend::check_cross_entropy(check, logits, targets, num_classes, mean_loss,
                                                          dlogits, row_loss, row_correct),
                        0};
    for (int64_t r = 0; r < checked.shape.rows; ++r) {
      const int64_t t = target_at(targets, r);
      if (t == ignore_index) continue;
      if (t < 0 || t >= num_classes)
        check.fail(loom_backend::target_out_of_range(r, t, num_classes, ignore_index));
      ++checked.counted;
    }
    return checked;
  };
  run_op("cross_entropy", contract, [&](const CountedRows& checked) {
    const int64_t rows = checked.shape.rows, width = checked.shape.width, counted = checked.counted;
    const float row_scale = counted > 0 ? grad_scale / static_cast<float>(counted) : 0.0f;

    constexpr int64_t kMaxChunks = 256;
    const int64_t chunk_rows = rows > 0 ? (rows + kMaxChunks - 1) / kMaxChunks : 1;
    const int64_t chunks = (rows + chunk_rows - 1) / chunk_rows;
    double partial[kMaxChunks] = {};
    const float* in = static_cast<const float*>(logits.data);
    float* grad = dlogits.defined() ? static_cast<float*>(dlogits.data) : nullptr;
    float* losses = row_loss.defined() ? static_cast<float*>(row_loss.data) : nullptr;
    int32_t* correct = row_correct.defined() ? static_cast<int32_t*>(row_correct.data) : nullptr;
#pragma omp parallel for num_threads(threads_) schedule(static) if (rows * width > kParallelMinElements)
    for (int64_t chunk = 0; chunk < chunks; ++chunk) {
      const int64_t end = (chunk + 1) * chunk_rows < rows ? (chunk + 1) * chunk_rows : rows;
      double chunk_sum = 0.0;
      for (int64_t r = chunk * chunk_rows; r < end; ++r) {
        const float* row = in + r * width;
        const int64_t t = target_at(targets, r);
        if (t == ignore_index) {
          if (losses != nullptr) losses[r] = 0.0f;
          if (correct != nullptr) correct[r] = 0;
          if (grad != nullptr)
            for (int64_t c = 0; c < width; ++c) grad[r * width + c] = 0.0f;
          continue;
        }
        float max = row[0];
#pragma omp simd reduction(max : max)
        for (int64_t c = 1; c < num_classes; ++c) max = row[c] > max ? row[c] : max;
        int64_t argmax = 0;  // the first column holding the maximum
        while (argmax + 1 < num_classes && row[argmax] != max) ++argmax;
        float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
        for (int64_t c = 0; c < num_classes; ++c) sum += expf(row[c] - max);
        const float log_sum = logf(sum);
        const float loss = log_sum - (row[t] - max);
        chunk_sum += loss;
        if (losses != nullptr) losses[r] = loss;
        if (correct != nullptr) correct[r] = argmax == t ? 1 : 0;
        if (grad != nullptr) {
          float* g = grad + r * width;
          const float inv_sum = 1.0f / sum;
#pragma omp simd
          for (int64_t c = 0; c < num_classes; ++c) g[c] = row_scale * expf(row[c] - max) * inv_sum;
          g[t] -= row_scale;
          for (int64_t c = num_classes; c < width; ++c) g[c] = 0.0f;
        }
      }
      partial[chunk] = chunk_sum;
    }
    double total = 0.0;
    for (int64_t chunk = 0; chunk < chunks; ++chunk) total += partial[chunk];
    *static_cast<float*>(mean_loss.data) =
        counted > 0 ? static_cast<float>(total / static_cast<double>(counted)) : 0.0f;
  });
}

}  // namespace loom_cpu
