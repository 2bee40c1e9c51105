// Pass 2 of the deterministic column sums (column_sums.cuh): tiles added in a fixed order.
#include "column_sums.cuh"

namespace loom_cuda {

__global__ void __launch_bounds__(kFinalizeThreads)
    column_finalize_kernel(const float* partial, int64_t tiles, int64_t count, FinalizeOutputs out) {
  __shared__ float lane_sums[kFinalizeThreads + kFinalizeMaxLanes];  // [lanes][columns + 1]: no bank conflicts
  const int columns = static_cast<int>(blockDim.x), lanes = static_cast<int>(blockDim.y);
  const int k = static_cast<int>(blockIdx.y);
  const int64_t i = blockIdx.x * int64_t{columns} + threadIdx.x;
  const float* sums = partial + k * tiles * count;
  float lane_sum = 0.0f;
  if (i < count)
    for (int64_t tile = threadIdx.y; tile < tiles; tile += lanes) lane_sum += sums[tile * count + i];
  lane_sums[threadIdx.y * (columns + 1) + threadIdx.x] = lane_sum;
  __syncthreads();
  // The output chosen by value, not out.sums[k] (a runtime index into a parameter is a stack copy).
  float* const target = k == 0 ? out.sums[0] : k == 1 ? out.sums[1] : out.sums[2];
  if (threadIdx.y != 0 || i >= count || target == nullptr) return;
  float total = 0.0f;
  for (int lane = 0; lane < lanes; ++lane) total += lane_sums[lane * (columns + 1) + threadIdx.x];
  target[i] += total;
}

namespace {

/// L for `tiles` tiles: the least power of two ≥ tiles, at most kFinalizeMaxLanes.
int finalize_lanes(int64_t tiles) {
  int lanes = 1;
  while (lanes < kFinalizeMaxLanes && lanes < tiles) lanes *= 2;
  return lanes;
}

}  // namespace

void finalize_column_sums(const float* partial, int64_t tiles, int64_t count, const FinalizeOutputs& out,
                          int outputs, cudaStream_t stream) {
  if (count == 0 || outputs == 0) return;
  const int lanes = finalize_lanes(tiles), columns = kFinalizeThreads / lanes;
  const dim3 grid(static_cast<unsigned>((count + columns - 1) / columns), static_cast<unsigned>(outputs));
  column_finalize_kernel<<<grid, dim3(columns, lanes), 0, stream>>>(partial, tiles, count, out);
}

}  // namespace loom_cuda
