// Pass 2 of the deterministic column sums (column_sums.cuh): tiles added in a fixed order.
#include "column_sums.cuh"

namespace loom_cuda {

__global__ void column_finalize_kernel(const float* partial, int64_t tiles, int64_t count, float* out) {
  const int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (i >= count) return;
  float total = 0.0f;
  for (int64_t tile = 0; tile < tiles; ++tile) total += partial[tile * count + i];
  out[i] += total;
}

}  // namespace loom_cuda
