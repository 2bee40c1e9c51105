// CublasLtGemm: descriptor/heuristic cache and the cublasLtMatmul call (see cublaslt_gemm.hpp).
#include "cublaslt_gemm.hpp"

#include <string>

#include "loom/sdk/error.hpp"

namespace loom_cuda {

namespace {

void lt_check(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  const loom_status code = status == CUBLAS_STATUS_ALLOC_FAILED    ? LOOM_E_OUT_OF_MEMORY
                           : status == CUBLAS_STATUS_NOT_SUPPORTED ? LOOM_E_UNSUPPORTED
                                                                   : LOOM_E_DEVICE;
  throw loom::Error(std::string("gemm: ") + what + ": " + cublasLtGetStatusName(status) + " (" +
                        cublasLtGetStatusString(status) + ")",
                    code);
}

/// The largest power of two ≤ 256 dividing the address: the alignment cuBLASLt may assume.
uint32_t alignment_of(const void* pointer) {
  const auto address = reinterpret_cast<uintptr_t>(pointer);
  uint32_t alignment = 256;
  while (alignment > 1 && address % alignment != 0) alignment /= 2;
  return alignment;
}

cublasLtMatrixLayout_t make_layout(cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld, int64_t batch,
                                   int64_t stride) {
  cublasLtMatrixLayout_t layout = nullptr;
  lt_check(
      cublasLtMatrixLayoutCreate(&layout, type, static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), ld),
      "cublasLtMatrixLayoutCreate");
  if (batch > 1) {
    const auto count = static_cast<int32_t>(batch);
    lt_check(
        cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count),
        "batch count");
    lt_check(cublasLtMatrixLayoutSetAttribute(layout, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                              sizeof stride),
             "batch stride");
  }
  return layout;
}

}  // namespace

size_t CublasLtGemm::KeyHash::operator()(const Key& key) const noexcept {
  uint64_t hash = 1469598103934665603ull;  // FNV-1a over the words
  for (int64_t word : key) {
    hash ^= static_cast<uint64_t>(word);
    hash *= 1099511628211ull;
  }
  return static_cast<size_t>(hash);
}

CublasLtGemm::CublasLtGemm(CachingAllocator& allocator, cudaStream_t stream)
    : allocator_(allocator), stream_(stream) {
  lt_check(cublasLtCreate(&handle_), "cublasLtCreate");
  try {
    workspace_ = allocator_.allocate(kWorkspaceBytes);
  } catch (...) {
    cublasLtDestroy(handle_);
    throw;
  }
}

CublasLtGemm::~CublasLtGemm() {
  for (auto& [key, plan] : plans_) destroy(plan);
  allocator_.deallocate(workspace_);
  cublasLtDestroy(handle_);
}

void CublasLtGemm::destroy(Plan& plan) noexcept {
  if (plan.a != nullptr) cublasLtMatrixLayoutDestroy(plan.a);
  if (plan.b != nullptr) cublasLtMatrixLayoutDestroy(plan.b);
  if (plan.c != nullptr) cublasLtMatrixLayoutDestroy(plan.c);
  if (plan.operation != nullptr) cublasLtMatmulDescDestroy(plan.operation);
  plan = Plan{};
}

CublasLtGemm::Plan& CublasLtGemm::plan_for(const ColumnMajorGemm& p, const Key& key) {
  auto found = plans_.find(key);
  if (found != plans_.end()) return found->second;
  Plan plan;
  cublasLtMatmulPreference_t preference = nullptr;
  try {
    lt_check(cublasLtMatmulDescCreate(&plan.operation, p.compute, CUDA_R_32F), "cublasLtMatmulDescCreate");
    const cublasOperation_t op_a = p.transpose_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    const cublasOperation_t op_b = p.transpose_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    lt_check(cublasLtMatmulDescSetAttribute(plan.operation, CUBLASLT_MATMUL_DESC_TRANSA, &op_a, sizeof op_a),
             "transa");
    lt_check(cublasLtMatmulDescSetAttribute(plan.operation, CUBLASLT_MATMUL_DESC_TRANSB, &op_b, sizeof op_b),
             "transb");
    if (p.bias != nullptr) {
      // An f32 bias whatever C's type: the sum is formed in f32 and rounded once, as bias_add on
      // an f32 product followed by a cast would. The pointer is set again at every run (plans are
      // shared by biases of one alignment); here it gives the heuristic that alignment.
      const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
      const int32_t bias_type = CUDA_R_32F;
      lt_check(cublasLtMatmulDescSetAttribute(plan.operation, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue,
                                              sizeof epilogue),
               "epilogue");
      lt_check(cublasLtMatmulDescSetAttribute(plan.operation, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_type,
                                              sizeof bias_type),
               "bias data type");
      lt_check(cublasLtMatmulDescSetAttribute(plan.operation, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &p.bias,
                                              sizeof p.bias),
               "bias pointer");
    }
    // Stored shapes: A is m × k (k × m when transposed), B is k × n (n × k when transposed).
    plan.a = p.transpose_a ? make_layout(p.ab_type, p.k, p.m, p.lda, p.batch, p.stride_a)
                           : make_layout(p.ab_type, p.m, p.k, p.lda, p.batch, p.stride_a);
    plan.b = p.transpose_b ? make_layout(p.ab_type, p.n, p.k, p.ldb, p.batch, p.stride_b)
                           : make_layout(p.ab_type, p.k, p.n, p.ldb, p.batch, p.stride_b);
    plan.c = make_layout(p.c_type, p.m, p.n, p.ldc, p.batch, p.stride_c);

    lt_check(cublasLtMatmulPreferenceCreate(&preference), "cublasLtMatmulPreferenceCreate");
    const uint64_t workspace = kWorkspaceBytes;
    lt_check(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                  &workspace, sizeof workspace),
             "workspace preference");
    // The pointers' alignments are part of the key: an algorithm chosen for them stays valid.
    const uint32_t align_a = static_cast<uint32_t>(key[16]), align_b = static_cast<uint32_t>(key[17]),
                   align_c = static_cast<uint32_t>(key[18]);
    lt_check(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
                                                  &align_a, sizeof align_a),
             "alignment preference");
    lt_check(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
                                                  &align_b, sizeof align_b),
             "alignment preference");
    lt_check(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
                                                  &align_c, sizeof align_c),
             "alignment preference");
    lt_check(cublasLtMatmulPreferenceSetAttribute(preference, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES,
                                                  &align_c, sizeof align_c),
             "alignment preference");
    cublasLtMatmulHeuristicResult_t result{};
    int found_algorithms = 0;
    const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(handle_, plan.operation, plan.a, plan.b, plan.c,
                                                                 plan.c, preference, 1, &result, &found_algorithms);
    if (p.bias != nullptr && (status == CUBLAS_STATUS_NOT_SUPPORTED || found_algorithms == 0)) {
      plan.supported = false;  // the caller falls back to the unfused ops
    } else {
      lt_check(status, "cublasLtMatmulAlgoGetHeuristic");
    }
    if (plan.supported && found_algorithms == 0)
      throw loom::Error("gemm: cuBLASLt has no algorithm for m=" + std::to_string(p.m) +
                            " n=" + std::to_string(p.n) + " k=" + std::to_string(p.k) +
                            " batch=" + std::to_string(p.batch),
                        LOOM_E_UNSUPPORTED);
    plan.algo = result.algo;
    cublasLtMatmulPreferenceDestroy(preference);
  } catch (...) {
    if (preference != nullptr) cublasLtMatmulPreferenceDestroy(preference);
    destroy(plan);
    throw;
  }
  return plans_.emplace(key, plan).first->second;
}

CublasLtGemm::Key CublasLtGemm::key_of(const ColumnMajorGemm& p) {
  return {p.ab_type,
                   p.c_type,
                   p.compute,
                   p.transpose_a,
                   p.transpose_b,
                   p.m,
                   p.n,
                   p.k,
                   p.lda,
                   p.ldb,
                   p.ldc,
                   p.batch,
                   p.stride_a,
                   p.stride_b,
                   p.stride_c,
                   p.bias != nullptr ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT,
                   alignment_of(p.a),
                   alignment_of(p.b),
                   alignment_of(p.c),
                   p.bias != nullptr ? alignment_of(p.bias) : 0};
}

void CublasLtGemm::run(const ColumnMajorGemm& p) {
  if (p.bias != nullptr && !run_with_bias(p))
    throw loom::Error("gemm: cuBLASLt has no algorithm for a bias epilogue at m=" + std::to_string(p.m) +
                          " n=" + std::to_string(p.n) + " k=" + std::to_string(p.k),
                      LOOM_E_UNSUPPORTED);
  if (p.bias == nullptr) enqueue(p, plan_for(p, key_of(p)));
}

bool CublasLtGemm::run_with_bias(const ColumnMajorGemm& p) {
  // cuBLASLt documents no alignment a bias must have, and its heuristic need not take the pointer's
  // into account: a bias below 16 bytes takes the unfused ops rather than risk a refused matmul.
  // (Parameters are allocated 64-byte aligned, so the model's biases always qualify.)
  if (alignment_of(p.bias) < 16) return false;
  Plan& plan = plan_for(p, key_of(p));
  if (!plan.supported) return false;
  lt_check(cublasLtMatmulDescSetAttribute(plan.operation, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &p.bias,
                                          sizeof p.bias),
           "bias pointer");
  enqueue(p, plan);
  return true;
}

void CublasLtGemm::enqueue(const ColumnMajorGemm& p, const Plan& plan) {
  lt_check(cublasLtMatmul(handle_, plan.operation, &p.alpha, p.a, plan.a, p.b, plan.b, &p.beta, p.c, plan.c,
                          p.c, plan.c, &plan.algo, workspace_, kWorkspaceBytes, stream_),
           "cublasLtMatmul");
}

}  // namespace loom_cuda
