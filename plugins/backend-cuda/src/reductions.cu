// Sums of squares per segment, the global norm, and the non-finite check.
//
// Sums run in f64 and are deterministic: the host (which holds the segment offsets) cuts every
// segment into chunks of kChunk elements and uploads the chunk table through pinned staging; one
// block per chunk reduces it with a fixed tree into partial[chunk]; then one thread per segment
// adds its chunks' partials in order. No atomics, so LAMB trust ratios and clipping reproduce.
// One segment (global_norm, a regression head's squared error) needs no table: its chunks follow
// from its bounds, so nothing goes through the staging buffer and no call waits for an earlier
// upload — the same chunks and order, the same bits.
#include <cmath>
#include <cstring>
#include <vector>

#include "cuda_backend.hpp"
#include "cuda_check.hpp"
#include "float_storage.cuh"
#include "loom_backend/op_contracts.hpp"
#include "op_preamble.cuh"
#include "warp_reductions.cuh"

namespace loom_cuda {
namespace {

constexpr int64_t kChunk = 16384;
constexpr int kThreads = 256;

/// Σx² of x[begin, end) by the block, a fixed tree, into *partial.
__device__ __forceinline__ void chunk_squares(const float* x, int64_t begin, int64_t end, double* partial) {
  __shared__ double shared[32];
  double sum = 0.0;
  for (int64_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
    const double v = static_cast<double>(x[i]);
    sum += v * v;
  }
  sum = block_sum(sum, shared);
  if (threadIdx.x == 0) *partial = sum;
}

/// Block b reduces chunk b (chunks[2b], chunks[2b+1]) into partial[b].
__global__ void chunk_squares_kernel(const float* x, const int64_t* chunks, double* partial) {
  chunk_squares(x, chunks[2 * blockIdx.x], chunks[2 * blockIdx.x + 1], partial + blockIdx.x);
}

/// One segment [begin, end): block b reduces its chunk b, [begin + b·kChunk, …) into partial[b].
__global__ void range_squares_kernel(const float* x, int64_t begin, int64_t end, double* partial) {
  const int64_t first = begin + blockIdx.x * kChunk, last = first + kChunk < end ? first + kChunk : end;
  chunk_squares(x, first, last, partial + blockIdx.x);
}

/// Σ partial[first .. last) in order, as f32 (√ of it when take_root).
__device__ __forceinline__ float partials_total(const double* partial, int64_t first, int64_t last, bool take_root) {
  double total = 0.0;
  for (int64_t c = first; c < last; ++c) total += partial[c];
  return static_cast<float>(take_root ? sqrt(total) : total);
}

/// out[0] = Σ partial[0 .. chunks) in order (√ of it when take_root).
__global__ void range_total_kernel(const double* partial, int64_t chunks, bool take_root, float* out) {
  out[0] = partials_total(partial, 0, chunks, take_root);
}

/// out[s] = Σ partial[first_chunk[s] .. first_chunk[s+1]) in order (√ of it when take_root).
__global__ void segment_totals_kernel(const double* partial, const int64_t* first_chunk, int64_t segments,
                                      bool take_root, float* out) {
  const int64_t s = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (s >= segments) return;
  out[s] = partials_total(partial, first_chunk[s], first_chunk[s + 1], take_root);
}

template <typename S>
__global__ void check_finite_kernel(const S* x, int64_t n, int32_t* flag) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const float v = load(x, i);
    if (!isfinite(v)) *flag = 1;  // every writer stores the same value: the race is benign
  }
}

}  // namespace

/// Σx² per segment [offsets[s], offsets[s+1]) of x into out[s] (√ when take_root).
static void segment_squares(CudaBackend& backend, const float* x, const std::vector<int64_t>& offsets,
                            bool take_root, float* out, const char* op) {
  const auto segments = static_cast<int64_t>(offsets.size()) - 1;
  if (segments <= 0) return;
  if (segments == 1) {  // no table: the chunks follow from the bounds
    const int64_t chunks = (offsets[1] - offsets[0] + kChunk - 1) / kChunk;
    if (chunks > 2147483647) throw loom::Error(std::string(op) + ": too many elements");
    auto* partial = static_cast<double*>(backend.scratch(static_cast<size_t>(chunks > 0 ? chunks : 1) * sizeof(double)));
    if (chunks > 0)
      range_squares_kernel<<<static_cast<unsigned>(chunks), kThreads, 0, backend.stream()>>>(x, offsets[0], offsets[1],
                                                                                          partial);
    range_total_kernel<<<1, 1, 0, backend.stream()>>>(partial, chunks, take_root, out);
    check_launch(op);
    return;
  }
  // Table: [chunk bounds (2·chunks) | first chunk of each segment (segments + 1)].
  std::vector<int64_t> bounds, first_chunk;
  first_chunk.reserve(static_cast<size_t>(segments) + 1);
  for (int64_t s = 0; s < segments; ++s) {
    first_chunk.push_back(static_cast<int64_t>(bounds.size() / 2));
    for (int64_t begin = offsets[s]; begin < offsets[s + 1]; begin += kChunk) {
      bounds.push_back(begin);
      bounds.push_back(begin + kChunk < offsets[s + 1] ? begin + kChunk : offsets[s + 1]);
    }
  }
  const auto chunks = static_cast<int64_t>(bounds.size() / 2);
  first_chunk.push_back(chunks);
  const size_t table_bytes = (bounds.size() + first_chunk.size()) * sizeof(int64_t);
  const size_t partial_offset = (table_bytes + 255) / 256 * 256;
  char* area = static_cast<char*>(
      backend.scratch(partial_offset + static_cast<size_t>(chunks > 0 ? chunks : 1) * sizeof(double)));
  char* staged = static_cast<char*>(backend.staging(table_bytes));
  std::memcpy(staged, bounds.data(), bounds.size() * sizeof(int64_t));
  std::memcpy(staged + bounds.size() * sizeof(int64_t), first_chunk.data(),
              first_chunk.size() * sizeof(int64_t));
  cuda_check(cudaMemcpyAsync(area, staged, table_bytes, cudaMemcpyHostToDevice, backend.stream()), op);
  backend.staging_enqueued();
  const auto* device_bounds = reinterpret_cast<const int64_t*>(area);
  const auto* device_first = device_bounds + bounds.size();
  auto* partial = reinterpret_cast<double*>(area + partial_offset);
  if (chunks > 0) {
    if (chunks > 2147483647) throw loom::Error(std::string(op) + ": too many elements");
    chunk_squares_kernel<<<static_cast<unsigned>(chunks), kThreads, 0, backend.stream()>>>(x, device_bounds,
                                                                                           partial);
  }
  segment_totals_kernel<<<static_cast<unsigned>((segments + 255) / 256), 256, 0, backend.stream()>>>(
      partial, device_first, segments, take_root, out);
  check_launch(op);
}

void CudaBackend::sum_squares(const loom::Tensor& x, const int64_t* segment_offsets, size_t num_segments,
                              const loom::Tensor& out) {
  const auto check = checks("sum_squares");
  loom_backend::check_sum_squares(check, x, segment_offsets, num_segments, out);
  if (num_segments == 0) return;
  const std::vector<int64_t> offsets(segment_offsets, segment_offsets + num_segments + 1);
  segment_squares(*this, static_cast<const float*>(x.data), offsets, false, static_cast<float*>(out.data),
                  "sum_squares");
}

void CudaBackend::global_norm(const loom::Tensor& x, const loom::Tensor& out) {
  const auto check = checks("global_norm");
  loom_backend::check_global_norm(check, x, out);
  segment_squares(*this, static_cast<const float*>(x.data), {0, x.numel()}, true,
                  static_cast<float*>(out.data), "global_norm");
}

void CudaBackend::check_finite(const loom::Tensor& x, const loom::Tensor& flag) {
  run_op(
      "check_finite",
      [&](const ArgumentChecks& check) {
        loom_backend::check_finite_flag(check, x, flag);
        return Elements{x.numel()};
      },
      {x.dtype},
      [&](Elements n, auto t) {
        using S = decltype(t);
        check_finite_kernel<S><<<grid_for(n.count, kThreads), kThreads, 0, stream_>>>(
            static_cast<const S*>(x.data), n.count, static_cast<int32_t*>(flag.data));
      });
}

}  // namespace loom_cuda
