// GEMM through oneDNN: dnnl_sgemm for plain fp32 matrices, cached matmul primitives for strided
// batches and bf16 (AMX on Sapphire Rapids). docs/decisions/gemm-library.md has the measurements.
#pragma once

#include <memory>

#include "loom/sdk/tensor.hpp"

namespace loom_cpu {

/// One validated GEMM: c = alpha·op(a)·op(b) + beta·c, with the matrix geometry of each operand.
struct GemmProblem {
  int batch_dims = 0;         ///< 0, 1 or 2 leading batch dimensions
  int64_t batch[2] = {1, 1};  ///< their extents
  int64_t m = 0, n = 0, k = 0;
  /// Element strides of op(a) [batch.., M, K], op(b) [batch.., K, N] and c [batch.., M, N]
  /// (transposes folded in; a batch stride of 0 broadcasts).
  int64_t a_strides[4] = {}, b_strides[4] = {}, c_strides[4] = {};
  bool transpose_a = false, transpose_b = false;
  int64_t lda = 0, ldb = 0, ldc = 0;  ///< row strides of the stored matrices
  loom::DType input_dtype = loom::DType::f32;
  loom::DType output_dtype = loom::DType::f32;
  const void* a = nullptr;
  const void* b = nullptr;
  void* c = nullptr;
  float alpha = 1.0f, beta = 0.0f;
};

class OneDnnGemm {
 public:
  explicit OneDnnGemm(int threads);
  ~OneDnnGemm();
  OneDnnGemm(const OneDnnGemm&) = delete;
  OneDnnGemm& operator=(const OneDnnGemm&) = delete;

  /// Runs `problem` on threads_for(problem) threads; matmul primitives are cached by geometry.
  void run(const GemmProblem& problem);
  /// One thread per kFlopsPerThread of the product's work, at least 1, at most this object's
  /// thread count. A smaller product gains less from a second thread than the fork and join
  /// cost, and on a busy machine every join also waits until the other thread is scheduled again
  /// (one 128-token bert-tiny inference request under a load of 6 on 2 cores: p50 242 ms with
  /// every GEMM on 2 threads, 13-20 ms with this; docs/performance.md). A function of the
  /// geometry only, so a cached primitive always runs with the thread count it was created for,
  /// as oneDNN requires.
  int threads_for(const GemmProblem& problem) const;
  /// About 60 µs of one core's fp32 GEMM on the machines measured (docs/performance.md).
  static constexpr double kFlopsPerThread = 4e6;
  /// Whether oneDNN multiplies bf16 on this CPU (it needs AVX-512; probed once, at construction,
  /// by creating a small bf16 matmul). Without it bf16 products must be widened to f32 first.
  bool native_bf16() const { return native_bf16_; }

 private:
  struct State;
  std::unique_ptr<State> state_;
  int threads_;
  bool native_bf16_ = false;
};

}  // namespace loom_cpu
