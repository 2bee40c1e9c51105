// Softmax cross-entropy with ignore index over rows, forward and backward in one pass, with
// nothing read back to the host.
//
// First one block checks the targets on the device (index_checks.cuh) — a target outside
// [0, num_classes) that is not the ignore index is recorded and reported at the backend's next
// wait point (device_error_record.hpp), in backend/cpu's words — and counts the R valid rows,
// which scale the gradient, into device memory. Then one block per row: max, first arg-max and
// Σexp over the class columns in one read of the row (each thread keeps a running maximum and its
// Σexp rescaled to it, the online softmax; block reductions combine them), then the row's loss
// and, for the gradient, one more pass (a row with a bad target is treated as ignored, so nothing
// is read outside it). A row of the MLM head is 30,522 floats, and the rows in flight do not fit
// in L2: the three separate passes over it this replaced read it from memory three times. The mean is a fixed-order
// f64 reduction of the row losses (one block), so it is deterministic. The scale
// grad_scale / R is computed from R on the device with backend/cpu's f32 arithmetic.
// dlogits may alias logits: every thread reads the target logit before the reductions, whose
// barriers order all reads of the row before the first write, and each later write is preceded by
// the same thread's read of that element.
#include <cmath>

#include "cuda_backend.hpp"
#include "cuda_check.hpp"
#include "index_checks.cuh"
#include "loom_backend/op_contracts.hpp"
#include "op_preamble.cuh"
#include "warp_reductions.cuh"

namespace loom_cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kAhead = 8;  // columns a thread reads before it takes them in

/// body(c, x) for a thread's columns c = first, first + stride, … below `walk`, in that order, with
/// x = row[c] for c below `read` (0 past it): kAhead columns are read before any is given to body,
/// so a thread has that many loads in flight rather than one. body may write column c of a buffer
/// aliasing row (its columns were read).
template <typename Body>
__device__ __forceinline__ void for_columns_read_ahead(const float* row, int64_t first, int64_t stride, int64_t read,
                                                       int64_t walk, Body&& body) {
  for (int64_t c0 = first; c0 < walk; c0 += kAhead * stride) {
    float xs[kAhead];
#pragma unroll
    for (int u = 0; u < kAhead; ++u) xs[u] = c0 + u * stride < read ? row[c0 + u * stride] : 0.0f;
#pragma unroll
    for (int u = 0; u < kAhead; ++u) {
      if (c0 + u * stride >= walk) break;
      body(c0 + u * stride, xs[u]);
    }
  }
}

template <typename Target>
__global__ void cross_entropy_rows_kernel(const float* logits, const Target* targets, int64_t width,
                                          int64_t num_classes, int64_t ignore_index, float grad_scale,
                                          const int64_t* counted, float* dlogits, float* row_loss,
                                          int32_t* row_correct, float* losses) {
  __shared__ float float_shared[32];
  __shared__ int64_t index_shared[32];
  const int64_t r = blockIdx.x;
  const float* row = logits + r * width;
  float* grad = dlogits != nullptr ? dlogits + r * width : nullptr;
  const int64_t t = static_cast<int64_t>(targets[r]);
  // An ignored row, or one whose target the check recorded as bad: the whole block takes this branch.
  if (t == ignore_index || t < 0 || t >= num_classes) {
    if (grad != nullptr)
      for (int64_t c = threadIdx.x; c < width; c += blockDim.x) grad[c] = 0.0f;
    if (threadIdx.x == 0) {
      if (row_loss != nullptr) row_loss[r] = 0.0f;
      if (row_correct != nullptr) row_correct[r] = 0;
      losses[r] = 0.0f;
    }
    return;
  }
  const float target_logit = row[t];
  // This thread's columns, in increasing order: running maximum m (NaN never takes it, as fmaxf),
  // the first column holding it, and Σexp(x − m), rescaled whenever m grows.
  float m = -INFINITY, s = 0.0f;
  int64_t first = INT64_MAX;
  const int64_t stride = blockDim.x;
  for_columns_read_ahead(row, threadIdx.x, stride, num_classes, num_classes, [&](int64_t c, float x) {
    if (x > m) {
      s *= expf(m - x);  // 0 while m is −∞
      m = x;
      first = c;
    } else if (x == m && first == INT64_MAX) {
      first = c;  // a −∞ column before any larger one: the first maximum of a row of −∞
    }
    s += x == -INFINITY ? 0.0f : expf(x - m);  // −∞ adds nothing, as exp(−∞ − max) would
  });
  const float max = block_max(m, float_shared);
  const int64_t argmax = block_min(m == max ? first : INT64_MAX, index_shared);  // the first column
  const float sum = block_sum(s == 0.0f ? 0.0f : s * expf(m - max), float_shared);
  const float loss = logf(sum) - (target_logit - max);
  if (threadIdx.x == 0) {
    if (row_loss != nullptr) row_loss[r] = loss;
    if (row_correct != nullptr) row_correct[r] = argmax == t ? 1 : 0;
    losses[r] = loss;
  }
  if (grad != nullptr) {
    const int64_t rows_counted = *counted;  // ≥ 1: this row counts
    const float row_scale = grad_scale / static_cast<float>(rows_counted);
    const float inv_sum = 1.0f / sum;
    // grad may alias the row: each thread writes only the columns it has read.
    for_columns_read_ahead(row, threadIdx.x, stride, num_classes, width, [&](int64_t c, float x) {
      float g = 0.0f;
      if (c < num_classes) {
        g = row_scale * expf(x - max) * inv_sum;
        if (c == t) g -= row_scale;
      }
      grad[c] = g;
    });
  }
}

/// mean_loss[0] = Σ losses / *counted, summed in f64 by one block in a fixed order.
__global__ void mean_loss_kernel(const float* losses, int64_t rows, const int64_t* counted,
                                 float* mean_loss) {
  __shared__ double shared[32];
  double sum = 0.0;
  for (int64_t r = threadIdx.x; r < rows; r += blockDim.x) sum += static_cast<double>(losses[r]);
  sum = block_sum(sum, shared);
  if (threadIdx.x == 0) {
    const int64_t n = *counted;
    mean_loss[0] = n > 0 ? static_cast<float>(sum / static_cast<double>(n)) : 0.0f;
  }
}

}  // namespace

void CudaBackend::cross_entropy(const loom::Tensor& logits, const loom::Tensor& targets, int64_t num_classes,
                                int64_t ignore_index, float grad_scale, const loom::Tensor& mean_loss,
                                const loom::Tensor& dlogits, const loom::Tensor& row_loss,
                                const loom::Tensor& row_correct) {
  run_op(
      "cross_entropy",
      [&](const ArgumentChecks& check) {
        const loom_backend::CrossEntropyRows shape = loom_backend::check_cross_entropy(
            check, logits, targets, num_classes, mean_loss, dlogits, row_loss, row_correct);
        check.require(shape.rows <= 2147483647, "too many rows");  // one block per row
        return shape;
      },
      [&](const loom_backend::CrossEntropyRows& shape) {
        const int64_t rows = shape.rows, width = shape.width;
        // Scratch: [R, the rows taking part (one int64) | each row's loss (rows)].
        constexpr size_t kLossesOffset = 256;
        char* area = static_cast<char*>(
            scratch(kLossesOffset + static_cast<size_t>(rows > 0 ? rows : 1) * sizeof(float)));
        auto* counted = reinterpret_cast<int64_t*>(area);
        auto* losses = reinterpret_cast<float*>(area + kLossesOffset);
        check_indices_on_device(*this, CheckedOp::cross_entropy, targets, num_classes, true, ignore_index,
                                counted);
        check_launch("cross_entropy");
        float* grad = dlogits.defined() ? static_cast<float*>(dlogits.data) : nullptr;
        float* loss_out = row_loss.defined() ? static_cast<float*>(row_loss.data) : nullptr;
        int32_t* correct = row_correct.defined() ? static_cast<int32_t*>(row_correct.data) : nullptr;
        if (rows > 0) {
          const auto* in = static_cast<const float*>(logits.data);
          if (targets.dtype == DType::i32)
            cross_entropy_rows_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream_>>>(
                in, static_cast<const int32_t*>(targets.data), width, num_classes, ignore_index, grad_scale,
                counted, grad, loss_out, correct, losses);
          else
            cross_entropy_rows_kernel<<<static_cast<unsigned>(rows), kThreads, 0, stream_>>>(
                in, static_cast<const int64_t*>(targets.data), width, num_classes, ignore_index, grad_scale,
                counted, grad, loss_out, correct, losses);
        }
        mean_loss_kernel<<<1, 1024, 0, stream_>>>(losses, rows, counted, static_cast<float*>(mean_loss.data));
      });
}

}  // namespace loom_cuda
