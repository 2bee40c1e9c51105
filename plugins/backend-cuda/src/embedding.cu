// Embedding gather (forward, also any row gather) and deterministic scatter-add (backward).
//
// "An id outside [0, V) is an error": the ids live on the device, so both ops copy them to the
// host (pinned staging, one stream synchronisation per call) and validate them there before any
// kernel touches the table: a bad id is a loom::Error naming its position, as on the CPU, and
// never an out-of-bounds access. That sync is the price of the contract (once per embedding op
// per step; the ids are small next to the rows they move).
//
// Scatter-add without float atomics: the host already holds the ids, so it groups the rows by id
// with a stable counting sort (rows of one id stay in increasing order) and uploads the grouping;
// one block per distinct id then adds that id's rows to its table row in row order, exactly the
// order of backend/cpu, so results are bit-identical to the CPU's and run to run.
#include <cstring>
#include <vector>

#include "cuda_backend.hpp"
#include "cuda_check.hpp"
#include "loom_backend/op_contracts.hpp"

namespace loom_cuda {
namespace {

constexpr int kThreads = 256;

template <typename Id>
__global__ void gather_kernel(const float* table, const Id* ids, float* out, int64_t n, int64_t cols,
                              bool accumulate) {
  const int64_t total = n * cols;
  for (int64_t e = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; e < total;
       e += int64_t{gridDim.x} * blockDim.x) {
    const int64_t i = e / cols, c = e - i * cols;
    const float v = table[static_cast<int64_t>(ids[i]) * cols + c];
    out[e] = accumulate ? out[e] + v : v;
  }
}

/// Block u adds rows order[starts[u] .. starts[u+1]) of dout, in that order, to row unique_ids[u].
__global__ void scatter_add_grouped_kernel(const float* dout, const int64_t* order, const int64_t* unique_ids,
                                           const int64_t* starts, float* dtable, int64_t cols) {
  const int64_t u = blockIdx.x;
  const int64_t begin = starts[u], end = starts[u + 1];
  float* dst = dtable + unique_ids[u] * cols;
  for (int64_t c = blockIdx.y * int64_t{blockDim.x} + threadIdx.x; c < cols;
       c += int64_t{gridDim.y} * blockDim.x) {
    float acc = dst[c];
    for (int64_t k = begin; k < end; ++k) acc += dout[order[k] * cols + c];
    dst[c] = acc;
  }
}

}  // namespace

/// The ids copied to the host as int64, after checking every one is in [0, vocab).
static std::vector<int64_t> host_ids(CudaBackend& backend, const ArgumentChecks& check,
                                     const loom::Tensor& ids, int64_t vocab) {
  const int64_t n = ids.numel();
  std::vector<int64_t> result(static_cast<size_t>(n));
  if (n == 0) return result;
  void* staged = backend.staging(ids.nbytes());
  cuda_check(cudaMemcpyAsync(staged, ids.data, ids.nbytes(), cudaMemcpyDeviceToHost, backend.stream()),
             check.op());
  cuda_check(cudaStreamSynchronize(backend.stream()), check.op());
  for (int64_t i = 0; i < n; ++i) {
    const int64_t id = ids.dtype == DType::i32 ? static_cast<const int32_t*>(staged)[i]
                                               : static_cast<const int64_t*>(staged)[i];
    if (id < 0 || id >= vocab)
      check.fail("ids[" + std::to_string(i) + "] = " + std::to_string(id) + " is outside [0, " +
                 std::to_string(vocab) + ")");
    result[static_cast<size_t>(i)] = id;
  }
  return result;
}

void CudaBackend::embedding_gather(const loom::Tensor& table, const loom::Tensor& ids,
                                   const loom::Tensor& out, bool accumulate) {
  const auto check = checks("embedding_gather");
  const loom_backend::EmbeddingRows shape = loom_backend::check_embedding_gather(check, table, ids, out);
  (void)host_ids(*this, check, ids, shape.vocab);
  const int64_t n = shape.ids, cols = shape.cols;
  if (n * cols == 0) return;
  const unsigned blocks = grid_for(n * cols, kThreads);
  if (ids.dtype == DType::i32)
    gather_kernel<<<blocks, kThreads, 0, stream_>>>(static_cast<const float*>(table.data),
                                                    static_cast<const int32_t*>(ids.data),
                                                    static_cast<float*>(out.data), n, cols, accumulate);
  else
    gather_kernel<<<blocks, kThreads, 0, stream_>>>(static_cast<const float*>(table.data),
                                                    static_cast<const int64_t*>(ids.data),
                                                    static_cast<float*>(out.data), n, cols, accumulate);
  check_launch("embedding_gather");
}

void CudaBackend::embedding_scatter_add(const loom::Tensor& dout, const loom::Tensor& ids,
                                        const loom::Tensor& dtable) {
  const auto check = checks("embedding_scatter_add");
  const loom_backend::EmbeddingRows shape =
      loom_backend::check_embedding_scatter_add(check, dout, ids, dtable);
  const int64_t n = shape.ids, cols = shape.cols, vocab = shape.vocab;
  const std::vector<int64_t> id = host_ids(*this, check, ids, vocab);
  if (n == 0 || cols == 0) return;

  // Stable counting sort of the rows by id: metadata = [order (n) | unique ids (U) | starts (U+1)].
  std::vector<int64_t> count(static_cast<size_t>(vocab) + 1, 0);
  for (int64_t v : id) ++count[static_cast<size_t>(v) + 1];
  for (size_t v = 1; v < count.size(); ++v) count[v] += count[v - 1];  // count[v] = first slot of id v
  std::vector<int64_t> metadata(static_cast<size_t>(n));
  std::vector<int64_t> next(count.begin(), count.end() - 1);
  for (int64_t i = 0; i < n; ++i) metadata[static_cast<size_t>(next[static_cast<size_t>(id[i])]++)] = i;
  std::vector<int64_t> unique_ids, starts;
  for (int64_t v = 0; v < vocab; ++v)
    if (count[static_cast<size_t>(v) + 1] > count[static_cast<size_t>(v)]) {
      unique_ids.push_back(v);
      starts.push_back(count[static_cast<size_t>(v)]);
    }
  starts.push_back(n);
  const auto distinct = static_cast<int64_t>(unique_ids.size());
  metadata.insert(metadata.end(), unique_ids.begin(), unique_ids.end());
  metadata.insert(metadata.end(), starts.begin(), starts.end());

  const size_t bytes = metadata.size() * sizeof(int64_t);
  void* staged = staging(bytes);
  std::memcpy(staged, metadata.data(), bytes);
  auto* device_metadata = static_cast<int64_t*>(scratch(bytes));
  cuda_check(cudaMemcpyAsync(device_metadata, staged, bytes, cudaMemcpyHostToDevice, stream_),
             "embedding_scatter_add");
  staging_enqueued();

  const dim3 grid(static_cast<unsigned>(distinct), static_cast<unsigned>((cols + kThreads - 1) / kThreads));
  check.require(distinct <= 2147483647, "too many distinct ids");
  scatter_add_grouped_kernel<<<grid, kThreads, 0, stream_>>>(
      static_cast<const float*>(dout.data), device_metadata, device_metadata + n,
      device_metadata + n + distinct, static_cast<float*>(dtable.data), cols);
  check_launch("embedding_scatter_add");
}

}  // namespace loom_cuda
