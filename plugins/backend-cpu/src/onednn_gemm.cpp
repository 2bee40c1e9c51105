// oneDNN GEMM paths. fp32 single matrices go to dnnl_sgemm (the fastest fp32 call measured on
// these machines); strided batches and every bf16 product go to a matmul primitive built once per
// geometry and cached with its memory objects (primitive creation costs far more than a small
// GEMM), so a steady-state call allocates nothing of ours. bf16 reaches this class only where
// oneDNN has bf16 kernels (native_bf16; gemm.cpp widens to f32 elsewhere).
#include "onednn_gemm.hpp"

#include <omp.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>

#include "loom/sdk/error.hpp"

namespace loom_cpu {
namespace {

/// Sets the calling thread's OpenMP team size for oneDNN, restoring it afterwards.
class OmpThreadScope {
 public:
  explicit OmpThreadScope(int threads) : saved_(omp_get_max_threads()) { omp_set_num_threads(threads); }
  ~OmpThreadScope() { omp_set_num_threads(saved_); }

 private:
  int saved_;
};

dnnl::memory::data_type onednn_type(loom::DType dtype) {
  return dtype == loom::DType::bf16 ? dnnl::memory::data_type::bf16 : dnnl::memory::data_type::f32;
}

uint32_t float_bits(float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, sizeof bits);
  return bits;
}

/// Dims and strides of one operand for oneDNN; a 0 batch stride becomes a broadcast dim of 1.
dnnl::memory::desc operand_desc(const GemmProblem& p, int64_t rows, int64_t cols, const int64_t* strides,
                                loom::DType dtype) {
  const int nd = p.batch_dims + 2;
  dnnl::memory::dims dims(nd), stride(nd);
  for (int d = 0; d < p.batch_dims; ++d) {
    dims[d] = strides[d] == 0 ? 1 : p.batch[d];
    stride[d] = strides[d] == 0 ? rows * cols : strides[d];
  }
  dims[nd - 2] = rows;
  dims[nd - 1] = cols;
  stride[nd - 2] = strides[nd - 2];
  stride[nd - 1] = strides[nd - 1];
  return dnnl::memory::desc(dims, onednn_type(dtype), stride);
}

}  // namespace

/// A cached matmul with its memory objects; each call only swaps the data pointers in.
struct CachedMatmul {
  dnnl::matmul primitive;
  dnnl::memory a, b, c;
  std::unordered_map<int, dnnl::memory> args;  // handles sharing a, b, c: built once
};

/// Everything that selects a primitive: geometry, dtypes, strides, alpha and beta.
using GeometryKey = std::array<int64_t, 10 + 3 * 4>;

struct OneDnnGemm::State {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  std::mutex mutex;
  std::map<GeometryKey, CachedMatmul> cache;
};

namespace {
/// Whether oneDNN can create a bf16 matmul primitive on this CPU.
bool probe_bf16_matmul(const dnnl::engine& engine) {
  const dnnl::memory::desc md({2, 2}, dnnl::memory::data_type::bf16, dnnl::memory::format_tag::ab);
  try {
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(md, md, md), engine);
    return true;
  } catch (const dnnl::error&) {
    return false;
  }
}
}  // namespace

OneDnnGemm::OneDnnGemm(int threads)
    : state_(std::make_unique<State>()), threads_(threads), native_bf16_(probe_bf16_matmul(state_->engine)) {}
OneDnnGemm::~OneDnnGemm() = default;

int OneDnnGemm::threads_for(const GemmProblem& p) const {
  const double flops = 2.0 * static_cast<double>(p.m) * static_cast<double>(p.n) * static_cast<double>(p.k) *
                       static_cast<double>(p.batch[0] * p.batch[1]);
  return std::clamp(static_cast<int>(flops / kFlopsPerThread), 1, threads_);
}

void OneDnnGemm::run(const GemmProblem& p) {
  if (p.m == 0 || p.n == 0) return;
  OmpThreadScope scope(threads_for(p));
  const bool single = p.batch_dims == 0 || (p.batch[0] * p.batch[1] == 1);
  if (single && p.input_dtype == loom::DType::f32 && p.output_dtype == loom::DType::f32) {
    const dnnl_status_t status =
        dnnl_sgemm(p.transpose_a ? 'T' : 'N', p.transpose_b ? 'T' : 'N', p.m, p.n, p.k, p.alpha,
                   static_cast<const float*>(p.a), p.lda, static_cast<const float*>(p.b), p.ldb, p.beta,
                   static_cast<float*>(p.c), p.ldc);
    if (status != dnnl_success)
      throw loom::Error("gemm: dnnl_sgemm failed with status " + std::to_string(status));
    return;
  }
  const int nd = p.batch_dims + 2;
  GeometryKey key{};
  int64_t* k = key.data();
  for (int64_t v : {static_cast<int64_t>(nd), p.m, p.n, p.k, p.batch[0], p.batch[1],
                    static_cast<int64_t>(p.input_dtype), static_cast<int64_t>(p.output_dtype),
                    static_cast<int64_t>(float_bits(p.alpha)), static_cast<int64_t>(float_bits(p.beta))})
    *k++ = v;
  for (const int64_t* strides : {p.a_strides, p.b_strides, p.c_strides})
    for (int d = 0; d < 4; ++d) *k++ = d < nd ? strides[d] : 0;

  // The lock also covers execution: the cached memory objects are shared by every call.
  std::lock_guard<std::mutex> lock(state_->mutex);
  auto found = state_->cache.find(key);
  if (found == state_->cache.end()) {
    const dnnl::memory::desc a_md = operand_desc(p, p.m, p.k, p.a_strides, p.input_dtype);
    const dnnl::memory::desc b_md = operand_desc(p, p.k, p.n, p.b_strides, p.input_dtype);
    const dnnl::memory::desc c_md = operand_desc(p, p.m, p.n, p.c_strides, p.output_dtype);
    dnnl::primitive_attr attr;
    if (p.alpha != 1.0f) attr.set_output_scales(0, {p.alpha});
    if (p.beta != 0.0f) {
      dnnl::post_ops ops;
      ops.append_sum(p.beta);
      attr.set_post_ops(ops);
    }
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), attr, state_->engine);
    CachedMatmul entry{dnnl::matmul(pd),
                       dnnl::memory(a_md, state_->engine, DNNL_MEMORY_NONE),
                       dnnl::memory(b_md, state_->engine, DNNL_MEMORY_NONE),
                       dnnl::memory(c_md, state_->engine, DNNL_MEMORY_NONE),
                       {}};
    entry.args = {{DNNL_ARG_SRC, entry.a}, {DNNL_ARG_WEIGHTS, entry.b}, {DNNL_ARG_DST, entry.c}};
    found = state_->cache.emplace(key, std::move(entry)).first;
  }
  CachedMatmul& cached = found->second;
  cached.a.set_data_handle(const_cast<void*>(p.a));
  cached.b.set_data_handle(const_cast<void*>(p.b));
  cached.c.set_data_handle(p.c);
  cached.primitive.execute(state_->stream, cached.args);
  state_->stream.wait();
}

}  // namespace loom_cpu
