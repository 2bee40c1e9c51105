// Validating ids and targets on the device, without a host round trip (device_error_record.hpp).
//
// The Backend contract makes an id outside [0, V) or a target outside [0, num_classes) an error.
// Reading them back to check them on the host would make the host wait for the GPU in every
// embedding and loss op; instead one small kernel per op scans them where they are and records
// the first invalid one in the backend's DeviceErrorRecord, which CudaBackend reports at its next
// wait point. The ops themselves skip invalid rows, so nothing reads outside a table.
//
// One block per check: the "first" error is then the lowest position, as backend/cpu reports it,
// with no second pass; the scan is over the batch's ids or rows (tens of thousands), a few
// microseconds next to the rows the op moves.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "cuda_backend.hpp"
#include "device_error_record.hpp"
#include "warp_reductions.cuh"

namespace loom_cuda {

constexpr int kIndexCheckThreads = 1024;

/// Records an invalid index unless `record` already holds an error: the integer atomicCAS of `op`
/// from 0 lets the first error win; only the winning thread writes the other fields.
__device__ __forceinline__ void record_index_error(DeviceErrorRecord* record, CheckedOp op, int64_t index,
                                                   int64_t value, int64_t limit, int64_t ignore_index) {
  if (atomicCAS(&record->op, 0, static_cast<int32_t>(op)) != 0) return;
  record->index = index;
  record->value = value;
  record->limit = limit;
  record->ignore_index = ignore_index;
}

/// One block over values[0, n): records the lowest position whose value is outside [0, limit) and
/// (when has_ignore) is not the ignore index; with `counted`, writes how many values are in
/// [0, limit) and not the ignore index (the rows a loss averages over).
template <typename Index>
__global__ void __launch_bounds__(kIndexCheckThreads)
    check_indices_kernel(const Index* values, int64_t n, int64_t limit, bool has_ignore, int64_t ignore_index,
                         CheckedOp op, DeviceErrorRecord* record, int64_t* counted) {
  __shared__ int64_t shared[32];
  int64_t first_bad = INT64_MAX, good = 0;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    const auto v = static_cast<int64_t>(values[i]);
    if (has_ignore && v == ignore_index) continue;
    if (v >= 0 && v < limit)
      ++good;
    else if (i < first_bad)
      first_bad = i;
  }
  first_bad = block_min(first_bad, shared);
  if (counted != nullptr) good = block_sum(good, shared);  // the same branch for the whole block
  if (threadIdx.x != 0) return;
  if (counted != nullptr) *counted = good;
  if (first_bad != INT64_MAX)
    record_index_error(record, op, first_bad, static_cast<int64_t>(values[first_bad]), limit, ignore_index);
}

/// Enqueues the check of `values` (i32|i64, contiguous) for `op` on the backend's stream. With
/// `counted` (device memory), also counts the valid, non-ignored values there.
inline void check_indices_on_device(const CudaBackend& backend, CheckedOp op, const loom::Tensor& values,
                                    int64_t limit, bool has_ignore, int64_t ignore_index, int64_t* counted) {
  const int64_t n = values.numel();
  if (n == 0 && counted == nullptr) return;
  if (values.dtype == loom::DType::i32)
    check_indices_kernel<<<1, kIndexCheckThreads, 0, backend.stream()>>>(
        static_cast<const int32_t*>(values.data), n, limit, has_ignore, ignore_index, op,
        backend.error_record(), counted);
  else
    check_indices_kernel<<<1, kIndexCheckThreads, 0, backend.stream()>>>(
        static_cast<const int64_t*>(values.data), n, limit, has_ignore, ignore_index, op,
        backend.error_record(), counted);
}

}  // namespace loom_cuda
