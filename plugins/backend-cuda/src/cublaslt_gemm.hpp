// Strided-batch matrix products through cuBLASLt, with the descriptors and the heuristic's
// algorithm cached per problem shape so a warm training step never re-plans a GEMM.
//
// The problem is given in cuBLASLt's column-major terms (gemm.cpp maps Loom's row-major
// c = op(a)·op(b) onto cᵀ = op(b)ᵀ·op(a)ᵀ). A 32 MiB workspace is allocated once.
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <unordered_map>

#include "caching_allocator.hpp"

namespace loom_cuda {

/// D = C = alpha·opA(A)·opB(B) + beta·C, column-major, `batch` matrices at fixed strides.
struct ColumnMajorGemm {
  cudaDataType_t ab_type = CUDA_R_32F;  // A and B storage
  cudaDataType_t c_type = CUDA_R_32F;   // C (= D) storage
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  bool transpose_a = false, transpose_b = false;
  int64_t m = 0, n = 0, k = 0;        // C is m × n, opA(A) m × k, opB(B) k × n
  int64_t lda = 0, ldb = 0, ldc = 0;  // leading dimensions (elements)
  int64_t batch = 1;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0;  // batch strides (elements; 0 broadcasts A or B)
  const void* a = nullptr;
  const void* b = nullptr;
  void* c = nullptr;
  float alpha = 1.0f, beta = 0.0f;
  /// With bias (f32 [m], one per row of the column-major C): D = alpha·opA(A)·opB(B) + beta·C +
  /// bias, added in f32 by cuBLASLt's BIAS epilogue before the one rounding to C's type.
  const float* bias = nullptr;
};

class CublasLtGemm {
 public:
  /// Creates the cuBLASLt handle and the workspace (from `allocator`, used on `stream`).
  CublasLtGemm(CachingAllocator& allocator, cudaStream_t stream);
  ~CublasLtGemm();
  CublasLtGemm(const CublasLtGemm&) = delete;
  CublasLtGemm& operator=(const CublasLtGemm&) = delete;

  /// Enqueues the product on the stream. Throws loom::Error naming "gemm" and the cuBLAS status.
  void run(const ColumnMajorGemm& problem);
  /// Enqueues a product with a bias (problem.bias set) and returns true, or returns false without
  /// enqueueing anything when cuBLASLt offers no algorithm for its BIAS epilogue with an f32 bias
  /// and C's type (remembered per shape: the caller then runs the unfused ops), or when the bias is
  /// not 16-byte aligned.
  bool run_with_bias(const ColumnMajorGemm& problem);

  /// Distinct shapes planned so far (tests check that repeats hit the cache).
  size_t planned_shapes() const { return plans_.size(); }

  static constexpr size_t kWorkspaceBytes = size_t{32} << 20;

 private:
  using Key = std::array<int64_t, 20>;
  struct KeyHash {
    size_t operator()(const Key& key) const noexcept;
  };
  struct Plan {
    cublasLtMatmulDesc_t operation = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    cublasLtMatmulAlgo_t algo{};
    bool supported = true;  // false: cuBLASLt has no algorithm for this problem (bias epilogues only)
  };
  static Key key_of(const ColumnMajorGemm& problem);
  Plan& plan_for(const ColumnMajorGemm& problem, const Key& key);
  void enqueue(const ColumnMajorGemm& problem, const Plan& plan);
  static void destroy(Plan& plan) noexcept;

  CachingAllocator& allocator_;
  cudaStream_t stream_;
  cublasLtHandle_t handle_ = nullptr;
  void* workspace_ = nullptr;
  std::unordered_map<Key, Plan, KeyHash> plans_;
};

}  // namespace loom_cuda
