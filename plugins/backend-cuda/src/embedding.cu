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
// sort's stability. Then the block at the first sorted position of each id adds that id's rows to
// its table row in that order — exactly backend/cpu's order, so results are bit-identical to the
// CPU's and run to run. Bad ids sort last under the key V and are skipped.
#include <cub/device/device_radix_sort.cuh>

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

/// Block k adds, when sorted position k is the first of its id, the rows of that id (positions
/// k, k+1, ... while the id is the same, in increasing row order) to the id's table row.
__global__ void scatter_add_sorted_kernel(const float* dout, const uint64_t* keys, int64_t n, int row_bits,
                                          int64_t vocab, float* dtable, int64_t cols) {
  const int64_t k = blockIdx.x;
  const auto id = static_cast<int64_t>(keys[k] >> row_bits);
  if (id >= vocab) return;                                                   // a bad id: skipped
  if (k > 0 && static_cast<int64_t>(keys[k - 1] >> row_bits) == id) return;  // not its id's first row
  const uint64_t row_mask = (uint64_t{1} << row_bits) - 1;
  float* dst = dtable + id * cols;
  for (int64_t c = blockIdx.y * int64_t{blockDim.x} + threadIdx.x; c < cols;
       c += int64_t{gridDim.y} * blockDim.x) {
    float acc = dst[c];
    for (int64_t j = k; j < n && static_cast<int64_t>(keys[j] >> row_bits) == id; ++j)
      acc += dout[static_cast<int64_t>(keys[j] & row_mask) * cols + c];
    dst[c] = acc;
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
        // Scratch: [keys (n) | sorted keys (n) | the sort's temporary storage].
        const size_t key_bytes = aligned(static_cast<size_t>(n) * sizeof(uint64_t));
        char* area = static_cast<char*>(scratch(2 * key_bytes + sort_bytes));
        auto* keys = reinterpret_cast<uint64_t*>(area);
        auto* sorted = reinterpret_cast<uint64_t*>(area + key_bytes);
        const unsigned blocks = grid_for(n, kThreads);
        if (ids.dtype == DType::i32)
          grouping_keys_kernel<<<blocks, kThreads, 0, stream_>>>(static_cast<const int32_t*>(ids.data), n,
                                                                 vocab, row_bits, keys);
        else
          grouping_keys_kernel<<<blocks, kThreads, 0, stream_>>>(static_cast<const int64_t*>(ids.data), n,
                                                                 vocab, row_bits, keys);
        check_launch("embedding_scatter_add");
        cuda_check(cub::DeviceRadixSort::SortKeys(area + 2 * key_bytes, sort_bytes, keys, sorted, items, 0,
                                                  key_bits, stream_),
                   "embedding_scatter_add: radix sort");
        const dim3 grid(static_cast<unsigned>(n), static_cast<unsigned>((cols + kThreads - 1) / kThreads));
        scatter_add_sorted_kernel<<<grid, kThreads, 0, stream_>>>(static_cast<const float*>(dout.data),
                                                                  sorted, n, row_bits, vocab,
                                                                  static_cast<float*>(dtable.data), cols);
      });
}

}  // namespace loom_cuda
