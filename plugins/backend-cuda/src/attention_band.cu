// The empty-band flags of a windowed attention call (attention_band.cuh): which groups of 16 query
// rows hold a row whose band has no allowed key, from the key mask, before the attention kernels
// of either path (flash_attention.cu's or attention_forward.cu's / attention_backward.cu's) run.
#include <cstdint>

#include "attention_band.cuh"
#include "cuda_backend.hpp"

namespace loom_cuda {
namespace {

__global__ void __launch_bounds__(band::EmptyBands::kThreads)
    empty_bands_kernel(const band::EmptyBandArgs args) {
  band::EmptyBands::run(args, nullptr, static_cast<int>(blockIdx.x), static_cast<int64_t>(blockIdx.y),
                        static_cast<int>(threadIdx.x));
}

}  // namespace

const uint8_t* CudaBackend::empty_band_flags(const float* mask, const AttentionShape& shape) {
  // No band, or no mask: no row's band is empty (row i's band holds key i, which nothing masks).
  if (shape.window < 0 || mask == nullptr) return nullptr;
  const int64_t groups = band::flag_groups(shape.seq);
  auto* flags = static_cast<uint8_t*>(scratch(static_cast<size_t>(shape.batch * groups)));
  const dim3 grid(
      static_cast<unsigned>((shape.seq + band::EmptyBands::kThreads - 1) / band::EmptyBands::kThreads),
      static_cast<unsigned>(shape.batch));
  empty_bands_kernel<<<grid, band::EmptyBands::kThreads, 0, stream_>>>(
      band::EmptyBandArgs{mask, flags, shape});
  return flags;
}

}  // namespace loom_cuda
