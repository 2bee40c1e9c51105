// Pass 2 of the deterministic column sums (column_sums.cuh): tiles added in a fixed order.
#include "column_sums.cuh"

namespace loom_cuda {

__global__ void __launch_bounds__(kFinalizeColumns* kFinalizeLanes)
    column_finalize_kernel(const float* partial, int64_t tiles, int64_t count, FinalizeOutputs out) {
  __shared__ float lane_sums[kFinalizeLanes][kFinalizeColumns + 1];  // + 1: no bank conflicts
  const int k = static_cast<int>(blockIdx.y);
  const int64_t i = blockIdx.x * int64_t{kFinalizeColumns} + threadIdx.x;
  const float* sums = partial + k * tiles * count;
  float lane_sum = 0.0f;
  if (i < count)
    for (int64_t tile = threadIdx.y; tile < tiles; tile += kFinalizeLanes) lane_sum += sums[tile * count + i];
  lane_sums[threadIdx.y][threadIdx.x] = lane_sum;
  __syncthreads();
  if (threadIdx.y != 0 || i >= count || out.sums[k] == nullptr) return;
  float total = 0.0f;
  for (int lane = 0; lane < kFinalizeLanes; ++lane) total += lane_sums[lane][threadIdx.x];
  out.sums[k][i] += total;
}

void finalize_column_sums(const float* partial, int64_t tiles, int64_t count, const FinalizeOutputs& out,
                          int outputs, cudaStream_t stream) {
  if (count == 0 || outputs == 0) return;
  const dim3 grid(static_cast<unsigned>((count + kFinalizeColumns - 1) / kFinalizeColumns),
                  static_cast<unsigned>(outputs));
  column_finalize_kernel<<<grid, dim3(kFinalizeColumns, kFinalizeLanes), 0, stream>>>(partial, tiles, count, out);
}

}  // namespace loom_cuda
