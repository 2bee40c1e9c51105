// Dropout with the counter-based Philox4x32-10 stream of loom/sdk/philox.hpp, bit-identical to
// backend/cpu: element e of the view is dropped when word (offset + e) of the stream keyed by
// seed is below dropout_threshold(p).
//
// One thread per Philox block: stream words [4·b, 4·b + 4) serve elements e = 4·b + w − offset,
// so each block is computed once (the CPU does the same per chunk). When offset % 4 == 0 a block's
// elements are one quad (4·(b − offset/4) .. + 3); with n % 4 == 0 and aligned views the thread then
// moves them in one access each way (row_quads.cuh), else element by element: the same words and
// the same arithmetic per element either way. The mask is never stored; backward regenerates it.
// y may alias x: each element is read and written by one thread.
#include "cuda_backend.hpp"
#include "cuda_check.hpp"
#include "float_storage.cuh"
#include "loom/sdk/philox.hpp"
#include "loom_backend/op_contracts.hpp"
#include "op_preamble.cuh"
#include "philox_device.cuh"
#include "row_quads.cuh"

namespace loom_cuda {
namespace {

constexpr int kThreads = 256;

/// Blocks [first_block, first_block + blocks) of the stream; elements outside [0, n) are skipped.
template <typename SI, typename SO>
__global__ void dropout_kernel(const SI* in, SO* out, int64_t n, uint32_t threshold, float scale,
                               uint64_t seed, uint64_t offset, uint64_t first_block, int64_t blocks) {
  for (int64_t j = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; j < blocks;
       j += int64_t{gridDim.x} * blockDim.x) {
    const uint64_t block = first_block + static_cast<uint64_t>(j);
    const uint4 words = philox_block(seed, block);
    const uint32_t word[4] = {words.x, words.y, words.z, words.w};
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      // Stream index 4·block + w is element (4·block + w − offset); unsigned wrap-around makes
      // indices before `offset` huge, so one comparison rejects both ends.
      const uint64_t e = block * 4u + static_cast<uint64_t>(w) - offset;
      if (e < static_cast<uint64_t>(n)) {
        const auto i = static_cast<int64_t>(e);
        store(out, i, word[w] >= threshold ? load(in, i) * scale : 0.0f);
      }
    }
  }
}

/// dropout_kernel when offset % 4 == 0, n = 4·quads and both views is_quad_aligned: quad q is
/// Philox block first_block + q.
template <typename SI, typename SO>
__global__ void dropout_quads_kernel(const SI* in, SO* out, int64_t quads, uint32_t threshold, float scale,
                                     uint64_t seed, uint64_t first_block) {
  for (int64_t q = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; q < quads;
       q += int64_t{gridDim.x} * blockDim.x) {
    const uint4 words = philox_block(seed, first_block + static_cast<uint64_t>(q));
    const uint32_t word[4] = {words.x, words.y, words.z, words.w};
    float v[4];
    load_quad(in, q, 4 * quads, true, v);
#pragma unroll
    for (int w = 0; w < 4; ++w) v[w] = word[w] >= threshold ? v[w] * scale : 0.0f;
    store_quad(out, q, 4 * quads, true, v);
  }
}

template <typename SI, typename SO>
void launch_dropout(const SI* in, SO* out, int64_t n, float p, uint64_t seed, uint64_t offset,
                    cudaStream_t stream) {
  if (n == 0) return;
  const uint32_t threshold = loom::dropout_threshold(p);
  const float scale = 1.0f / (1.0f - p);
  const uint64_t first_block = offset >> 2;
  if (offset % 4 == 0 && n % 4 == 0 && is_quad_aligned<SI>(in) && is_quad_aligned<SO>(out)) {
    dropout_quads_kernel<SI, SO><<<grid_for(n / 4, kThreads), kThreads, 0, stream>>>(
        in, out, n / 4, threshold, scale, seed, first_block);
    return;
  }
  const uint64_t last_block = (offset + static_cast<uint64_t>(n) - 1) >> 2;
  const auto blocks = static_cast<int64_t>(last_block - first_block + 1);
  dropout_kernel<SI, SO><<<grid_for(blocks, kThreads), kThreads, 0, stream>>>(
      in, out, n, threshold, scale, seed, offset, first_block, blocks);
}

}  // namespace

void CudaBackend::dropout_forward(const loom::Tensor& x, const loom::Tensor& y, float p, uint64_t seed,
                                  uint64_t offset) {
  run_op(
      "dropout_forward",
      [&](const ArgumentChecks& check) {
        loom_backend::check_dropout_forward(check, x, y, p);
        return Elements{x.numel()};
      },
      {x.dtype, y.dtype},
      [&](Elements n, auto xt, auto yt) {
        using SI = decltype(xt);
        using SO = decltype(yt);
        launch_dropout(static_cast<const SI*>(x.data), static_cast<SO*>(y.data), n.count, p, seed, offset,
                       stream_);
      });
}

void CudaBackend::dropout_backward(const loom::Tensor& dy, const loom::Tensor& dx, float p, uint64_t seed,
                                   uint64_t offset) {
  run_op(
      "dropout_backward",
      [&](const ArgumentChecks& check) {
        loom_backend::check_dropout_backward(check, dy, dx, p);
        return Elements{dy.numel()};
      },
      [&](Elements n) {
        launch_dropout(static_cast<const float*>(dy.data), static_cast<float*>(dx.data), n.count, p, seed,
                       offset, stream_);
      });
}

}  // namespace loom_cuda
