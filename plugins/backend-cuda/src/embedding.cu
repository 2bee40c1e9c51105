// Embedding gather (forward, also any row gather) and deterministic scatter-add (backward), with
// nothing read back to the host. The gather moves a float4 per thread when C % 4 == 0 and the
// table and out are 16-byte aligned (row_quads.cuh), else one float: the same sums either way.
//
// "An id outside [0, V) is an error": both ops check their ids on the device (index_checks.cuh)
// and record the first bad one, which the backend reports at its next wait point
// (device_error_record.hpp); the kernels skip a bad id's row, so no access ever leaves the table.
//
// Scatter-add without float atomics: the rows are grouped by id on the device by sorting one
// 64-bit key per row, (id << row_bits) | row, with CUB's radix sort over just the bits in use. The
// keys are distinct, so the order is total (rows of one id in increasing row order) whatever the
// sort's stability. The order of addition is loom_backend::kScatterAddChunkRows's (R), as on
// backend/cpu, so results are bit-identical to the CPU's and run to run: each sorted position
// learns where its id's rows start (a max-scan of the run heads); each run of R rows after an id's
// first R is summed from zero into a partial (chunk_sums_kernel: partial k / R, distinct because
// such runs start R apart); then at each id's first position its first R rows and its partials are
// added, in order, to the table row (scatter_add_sorted_kernel). A block walks 32 sorted positions
// and does that work for those of them that start a run or an id. An id with
// thousands of rows (a token type) is then a few hundred short sums in parallel and one short one,
// not one sum thousands of rows long. Bad ids sort last under the key V and are skipped.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <cuda/functional>

#include <algorithm>
#include <bit>
#include <cstdint>

#include "cuda_backend.hpp"
#include "cuda_check.hpp"
#include "index_checks.cuh"
#include "loom_backend/op_contracts.hpp"
#include "op_preamble.cuh"
#include "row_quads.cuh"

namespace loom_cuda {
namespace {

constexpr int kThreads = 256;

template <typename Id>
__global__ void gather_kernel(const float* table, const Id* ids, float* out, int64_t n, int64_t cols,
                              int64_t vocab, bool accumulate) {
  const int64_t total = n * cols;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < total;
       e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t i = e / cols, c = e - i * cols;
    const auto id = static_cast<int64_t>(ids[i]);
    if (id < 0 || id >= vocab) continue;  // recorded by the id check; reported at the next wait
    const float v = table[id * cols + c];
    out[e] = accumulate ? out[e] + v : v;
  }
}

/// gather_kernel four columns per thread: item e is quad c = e mod (C / 4) of out row i = e / (C / 4).
/// C % 4 == 0, table and out 16-byte aligned.
template <typename Id>
__global__ void gather_quads_kernel(const float* table, const Id* ids, float* out, int64_t n, int64_t cols,
                                    int64_t vocab, bool accumulate) {
  const int64_t col_quads = cols / 4, total = n * col_quads;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < total;
       e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t i = e / col_quads, c = e - i * col_quads;
    const auto id = static_cast<int64_t>(ids[i]);
    if (id < 0 || id >= vocab) continue;  // recorded by the id check; reported at the next wait
    float v[4];
    load_quad(table + id * cols, c, cols, true, v);
    if (accumulate) {
      float o[4];
      load_quad(out + i * cols, c, cols, true, o);
#pragma unroll
      for (int j = 0; j < 4; ++j) v[j] = o[j] + v[j];
    }
    store_quad(out + i * cols, c, cols, true, v);
  }
}

/// keys[i] = (group << row_bits) | i, group = ids[i] when in [0, vocab), else vocab (sorts last).
template <typename Id>
__global__ void grouping_keys_kernel(const Id* ids, int64_t n, int64_t vocab, int row_bits, uint64_t* keys) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const auto id = static_cast<int64_t>(ids[i]);
    const auto group = static_cast<uint64_t>(id >= 0 && id < vocab ? id : vocab);
    keys[i] = (group << row_bits) | static_cast<uint64_t>(i);
  }
}

constexpr int64_t kChunk = loom_backend::kScatterAddChunkRows;

/// heads[k] = k where sorted position k starts its id's rows, else 0: its inclusive max-scan is
/// the first position of k's id.
__global__ void run_heads_kernel(const uint64_t* keys, int64_t n, int row_bits, int32_t* heads) {
  for (int64_t k = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; k < n; k += int64_t{gridDim.x} * blockDim.x)
    heads[k] = k == 0 || (keys[k] >> row_bits) != (keys[k - 1] >> row_bits) ? static_cast<int32_t>(k) : 0;
}

/// The sum, from zero in sorted order, of the rows at positions [k, end) (all of one id).
__device__ __forceinline__ float sorted_rows_sum(const float* dout, const uint64_t* keys, int64_t k, int64_t end,
                                                 uint64_t row_mask, int64_t cols, int64_t c, float acc) {
#pragma unroll 8
  for (int64_t j = k; j < end; ++j) acc += dout[static_cast<int64_t>(keys[j] & row_mask) * cols + c];
  return acc;
}

/// The end of the run of up to R positions from k that hold k's id (n: end of the keys). Sorted, so
/// the id's positions are a prefix of [k, k + R): a binary search, at most log2(R) reads.
__device__ __forceinline__ int64_t chunk_end(const uint64_t* keys, int64_t k, int64_t n, int row_bits, uint64_t id) {
  int64_t valid = k + 1, beyond = k + kChunk < n ? k + kChunk : n;  // keys[valid − 1] holds id
  if ((keys[beyond - 1] >> row_bits) == id) return beyond;
  while (beyond - valid > 1) {  // keys[beyond − 1] does not hold id
    const int64_t mid = valid + (beyond - valid) / 2;
    if ((keys[mid - 1] >> row_bits) == id)
      valid = mid;
    else
      beyond = mid;
  }
  return valid;
}

/// Sorted positions per block of the two kernels below: a block walks its positions in turn (the
/// test on each is the same for all its threads), so that the many positions with nothing to do
/// (most of them, in either kernel) are a few loads each rather than a block launch each.
constexpr int64_t kPositionsPerBlock = 32;

/// The sorted positions of block blockIdx.x: [begin, end).
struct BlockPositions {
  int64_t begin, end;
  __device__ explicit BlockPositions(int64_t n)
      : begin(blockIdx.x * kPositionsPerBlock),
        end(begin + kPositionsPerBlock < n ? begin + kPositionsPerBlock : n) {}
};

/// For each position k of the block that starts a run of R rows after its id's first R (k − first
/// ≥ R, a multiple of R), stores the run's sum from zero as partial[k / R].
__global__ void chunk_sums_kernel(const float* dout, const uint64_t* keys, const int32_t* first, int64_t n,
                                  int row_bits, int64_t vocab, float* partial, int64_t cols) {
  const uint64_t row_mask = (uint64_t{1} << row_bits) - 1;
  const BlockPositions positions(n);
  for (int64_t k = positions.begin; k < positions.end; ++k) {
    const uint64_t id = keys[k] >> row_bits;
    if (id >= static_cast<uint64_t>(vocab)) continue;  // a bad id: skipped
    const int64_t o = k - first[k];
    if (o < kChunk || o % kChunk != 0) continue;
    const int64_t end = chunk_end(keys, k, n, row_bits, id);
    for (int64_t c = blockIdx.y * int64_t{blockDim.x} + threadIdx.x; c < cols;
         c += int64_t{gridDim.y} * blockDim.x)
      partial[(k / kChunk) * cols + c] = sorted_rows_sum(dout, keys, k, end, row_mask, cols, c, 0.0f);
  }
}

/// For each position k of the block that is the first of its id, adds that id's first R rows (in
/// row order) and then its runs' partial sums (in order) to the id's table row.
__global__ void scatter_add_sorted_kernel(const float* dout, const uint64_t* keys, const float* partial, int64_t n,
                                          int row_bits, int64_t vocab, float* dtable, int64_t cols) {
  const uint64_t row_mask = (uint64_t{1} << row_bits) - 1;
  const BlockPositions positions(n);
  for (int64_t k = positions.begin; k < positions.end; ++k) {
    const uint64_t id = keys[k] >> row_bits;
    if (id >= static_cast<uint64_t>(vocab)) continue;        // a bad id: skipped
    if (k > 0 && (keys[k - 1] >> row_bits) == id) continue;   // not its id's first row
    const int64_t end = chunk_end(keys, k, n, row_bits, id);
    float* dst = dtable + static_cast<int64_t>(id) * cols;
    for (int64_t c = blockIdx.y * int64_t{blockDim.x} + threadIdx.x; c < cols;
         c += int64_t{gridDim.y} * blockDim.x) {
      float acc = sorted_rows_sum(dout, keys, k, end, row_mask, cols, c, dst[c]);
      for (int64_t run = k + kChunk; run < n && (keys[run] >> row_bits) == id; run += kChunk)
        acc += partial[(run / kChunk) * cols + c];
      dst[c] = acc;
    }
  }
}

size_t aligned(size_t bytes) {
  return (bytes + 255) / 256 * 256;
}

/// embedding_scatter_add's geometry: the contract's rows and the bits of its grouping keys.
struct ScatterRows {
  loom_backend::EmbeddingRows shape;
  int row_bits, key_bits;
};
/// No ids, rows of no columns, or no table rows (then every id is bad, and recorded by the id
/// check): nothing to sort or add.
bool nothing_to_launch(const ScatterRows& scatter) {
  return scatter.shape.ids == 0 || scatter.shape.cols == 0 || scatter.shape.vocab == 0;
}

}  // namespace

void CudaBackend::embedding_gather(const loom::Tensor& table, const loom::Tensor& ids,
                                   const loom::Tensor& out, bool accumulate) {
  run_op(
      "embedding_gather",
      [&](const ArgumentChecks& check) {
        const loom_backend::EmbeddingRows shape =
            loom_backend::check_embedding_gather(check, table, ids, out);
        check_indices_on_device(*this, CheckedOp::embedding_gather, ids, shape.vocab, false, 0, nullptr);
        check_launch("embedding_gather");
        return shape;
      },
      [&](const loom_backend::EmbeddingRows& shape) {
        const int64_t n = shape.ids, cols = shape.cols, vocab = shape.vocab;
        const auto* rows = static_cast<const float*>(table.data);
        auto* dst = static_cast<float*>(out.data);
        const bool quads = cols % 4 == 0 && is_aligned16(rows) && is_aligned16(dst);
        const auto launch = [&](const auto* id_data) {
          if (quads)
            gather_quads_kernel<<<grid_for(n * cols / 4, kThreads), kThreads, 0, stream_>>>(
                rows, id_data, dst, n, cols, vocab, accumulate);
          else
            gather_kernel<<<grid_for(n * cols, kThreads), kThreads, 0, stream_>>>(rows, id_data, dst, n, cols,
                                                                                  vocab, accumulate);
        };
        if (ids.dtype == DType::i32)
          launch(static_cast<const int32_t*>(ids.data));
        else
          launch(static_cast<const int64_t*>(ids.data));
      });
}

void CudaBackend::embedding_scatter_add(const loom::Tensor& dout, const loom::Tensor& ids,
                                        const loom::Tensor& dtable) {
  run_op(
      "embedding_scatter_add",
      [&](const ArgumentChecks& check) {
        ScatterRows scatter{loom_backend::check_embedding_scatter_add(check, dout, ids, dtable), 0, 0};
        const int64_t n = scatter.shape.ids, cols = scatter.shape.cols, vocab = scatter.shape.vocab;
        check_indices_on_device(*this, CheckedOp::embedding_scatter_add, ids, vocab, false, 0, nullptr);
        check_launch("embedding_scatter_add");
        if (nothing_to_launch(scatter)) return scatter;
        // Key bits: the row needs bit_width(n − 1), the id bit_width(V) (so that V itself, the bad
        // ids' group, fits).
        check.require(n <= 2147483647, "more than 2^31 − 1 ids");
        scatter.row_bits = std::bit_width(static_cast<uint64_t>(n - 1));
        scatter.key_bits = scatter.row_bits + std::bit_width(static_cast<uint64_t>(vocab));
        check.require(scatter.key_bits <= 64, "the ids do not fit the 64-bit grouping key (vocabulary " +
                                                  std::to_string(vocab) + ", " + std::to_string(n) + " ids)");
        check.require((cols + kThreads - 1) / kThreads <= 65535, "more than 65535·256 columns");
        return scatter;
      },
      [&](const ScatterRows& scatter) {
        const int64_t n = scatter.shape.ids, cols = scatter.shape.cols, vocab = scatter.shape.vocab;
        const int row_bits = scatter.row_bits, key_bits = scatter.key_bits;
        const int items = static_cast<int>(n);
        size_t sort_bytes = 0;
        cuda_check(
            cub::DeviceRadixSort::SortKeys(nullptr, sort_bytes, static_cast<const uint64_t*>(nullptr),
                                           static_cast<uint64_t*>(nullptr), items, 0, key_bits, stream_),
            "embedding_scatter_add: radix sort size");
        size_t scan_bytes = 0;
        cuda_check(cub::DeviceScan::InclusiveScan(nullptr, scan_bytes, static_cast<const int32_t*>(nullptr),
                                                  static_cast<int32_t*>(nullptr), cuda::maximum<int32_t>{}, items,
                                                  stream_),
                   "embedding_scatter_add: scan size");
        // Scratch: [keys (n) | sorted keys (n) | run heads (n) | first positions (n) | partial sums
        // (⌈n / R⌉ × C) | the sort's or the scan's temporary storage].
        const size_t key_bytes = aligned(static_cast<size_t>(n) * sizeof(uint64_t));
        const size_t head_bytes = aligned(static_cast<size_t>(n) * sizeof(int32_t));
        const size_t partial_bytes = aligned(static_cast<size_t>((n + kChunk - 1) / kChunk * cols) * sizeof(float));
        const size_t fixed = 2 * key_bytes + 2 * head_bytes + partial_bytes;
        char* area = static_cast<char*>(scratch(fixed + std::max(sort_bytes, scan_bytes)));
        auto* keys = reinterpret_cast<uint64_t*>(area);
        auto* sorted = reinterpret_cast<uint64_t*>(area + key_bytes);
        auto* heads = reinterpret_cast<int32_t*>(area + 2 * key_bytes);
        auto* first = reinterpret_cast<int32_t*>(area + 2 * key_bytes + head_bytes);
        auto* partial = reinterpret_cast<float*>(area + 2 * key_bytes + 2 * head_bytes);
        void* temporary = area + fixed;
        const unsigned blocks = grid_for(n, kThreads);
        if (ids.dtype == DType::i32)
          grouping_keys_kernel<<<blocks, kThreads, 0, stream_>>>(static_cast<const int32_t*>(ids.data), n,
                                                                 vocab, row_bits, keys);
        else
          grouping_keys_kernel<<<blocks, kThreads, 0, stream_>>>(static_cast<const int64_t*>(ids.data), n,
                                                                 vocab, row_bits, keys);
        check_launch("embedding_scatter_add");
        cuda_check(cub::DeviceRadixSort::SortKeys(temporary, sort_bytes, keys, sorted, items, 0, key_bits, stream_),
                   "embedding_scatter_add: radix sort");
        run_heads_kernel<<<blocks, kThreads, 0, stream_>>>(sorted, n, row_bits, heads);
        check_launch("embedding_scatter_add");
        cuda_check(cub::DeviceScan::InclusiveScan(temporary, scan_bytes, static_cast<const int32_t*>(heads), first,
                                                  cuda::maximum<int32_t>{}, items, stream_),
                   "embedding_scatter_add: scan");
        const dim3 grid(static_cast<unsigned>((n + kPositionsPerBlock - 1) / kPositionsPerBlock),
                        static_cast<unsigned>((cols + kThreads - 1) / kThreads));
        const auto* rows = static_cast<const float*>(dout.data);
        chunk_sums_kernel<<<grid, kThreads, 0, stream_>>>(rows, sorted, first, n, row_bits, vocab, partial, cols);
        check_launch("embedding_scatter_add");
        scatter_add_sorted_kernel<<<grid, kThreads, 0, stream_>>>(rows, sorted, partial, n, row_bits, vocab,
                                                                  static_cast<float*>(dtable.data), cols);
      });
}

}  // namespace loom_cuda
