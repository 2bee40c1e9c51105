// Element offsets of arbitrary strided views on the device: element number e of a row-major walk
// over `shape` lies at Σ index_k·strides_k. Passed to kernels by value (≤ kMaxDims dims).
#pragma once

#include <cstdint>

#include "loom/sdk/tensor.hpp"

namespace loom_cuda {

struct StridedLayout {
  int ndim = 0;
  int64_t shape[loom::kMaxDims] = {};
  int64_t strides[loom::kMaxDims] = {};

  static StridedLayout of(const loom::Tensor& t) {
    StridedLayout layout;
    layout.ndim = t.ndim;
    for (int k = 0; k < t.ndim; ++k) {
      layout.shape[k] = t.shape[k];
      layout.strides[k] = t.strides[k];
    }
    return layout;
  }

  /// Offset (elements) of element number `e` of the row-major walk.
  __device__ __forceinline__ int64_t offset(int64_t e) const {
    int64_t result = 0;
    for (int k = ndim - 1; k >= 0; --k) {
      const int64_t extent = shape[k];
      result += (e % extent) * strides[k];
      e /= extent;
    }
    return result;
  }
};

}  // namespace loom_cuda
