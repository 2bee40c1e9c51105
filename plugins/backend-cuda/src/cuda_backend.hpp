// backend/cuda: the Backend op set, fused attention, the fused residual + LayerNorm and a device
// description on one NVIDIA GPU.
//
// One CUDA stream per backend, created at construction: every op, copy and allocation reuse is
// ordered on it, so ops are asynchronous and only copy_to_host and synchronize wait for the GPU.
// Ops that validate device data (embedding ids, cross-entropy targets) record a bad value in the
// device error record instead of reading it back; those wait points report it
// (device_error_record.hpp), and TransferCounter counts them.
// GEMM goes through cuBLASLt (cublaslt_gemm.cpp); every other op is a kernel of our own, one
// .cu file per family. This class holds the state the ops share: the stream, the caching
// allocator, a grow-only device scratch area and a pinned host staging area.
//
// Every op enters through checks(op): the one place that binds the device and, with the debug
// option sync_check, waits for the previous op and names it if the device faulted. While per-op
// timing is on (OpProfiler), what checks() returns also brackets the op with a pair of CUDA events
// (cuda_op_timer.hpp) until it goes out of scope at the op's end.
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "attention_shape.hpp"
#include "caching_allocator.hpp"
#include "device_error_record.hpp"
#include "loom/sdk/backend.hpp"
#include "loom/sdk/ops/bias_gelu_backward_copy.hpp"
#include "loom/sdk/ops/bias_grad_copy.hpp"
#include "loom/sdk/ops/device_description.hpp"
#include "loom/sdk/ops/fused_attention.hpp"
#include "loom/sdk/ops/geglu.hpp"
#include "loom/sdk/ops/gemm_extent_alignment.hpp"
#include "loom/sdk/ops/linear_bias.hpp"
#include "loom/sdk/ops/memory_usage.hpp"
#include "loom/sdk/ops/op_profiler.hpp"
#include "loom/sdk/ops/optimizer_steps.hpp"
#include "loom/sdk/ops/optimizer_working_copy.hpp"
#include "loom/sdk/ops/packed_attention.hpp"
#include "loom/sdk/ops/residual_layernorm.hpp"
#include "loom/sdk/ops/residual_layernorm_backward_copy.hpp"
#include "loom/sdk/ops/rotary_embedding.hpp"
#include "loom/sdk/ops/transfer_counts.hpp"
#include "loom/sdk/ops/windowed_attention.hpp"
#include "loom_backend/argument_checks.hpp"
#include "loom_backend/gemm_contract.hpp"
#include "loom_backend/op_contracts.hpp"
#include "loom_backend/op_timing.hpp"

// plugin.hpp brings toml++, which nvcc cannot parse: the .cu files only need the name.
LOOM_SDK_NAMESPACE_BEGIN
class ComponentContext;
LOOM_SDK_NAMESPACE_END

namespace loom_backend {
struct PackedDims;
}

namespace loom_cuda {

struct PackedLaunch;

using loom::DType;
using loom_backend::ArgumentChecks;

class CublasLtGemm;
struct ColumnMajorGemm;

class CudaBackend final : public loom::Backend,
                          public loom::FusedAttention,
                          public loom::WindowedAttention,
                          public loom::RotaryEmbedding,
                          public loom::PackedAttention,
                          public loom::GatedGelu,
                          public loom::DeviceDescription,
                          public loom::OptimizerSteps,
                          public loom::OptimizerWorkingCopy,
                          public loom::ResidualLayerNorm,
                          public loom::ResidualLayerNormBackwardCopy,
                          public loom::LinearBias,
                          public loom::BiasGeluBackwardCopy,
                          public loom::BiasGradCopy,
                          public loom::GemmExtentAlignment,
                          public loom::TransferCounter,
                          public loom::OpProfiler,
                          public loom::MemoryUsage {
 public:
  /// Reads options `device` (default -1: the launcher's local rank modulo the device count,
  /// device_placement.hpp), `tf32` and `sync_check` (also on with LOOM_CUDA_SYNC_CHECK=1).
  /// A dry run (`loom check`) validates the options and acquires no device.
  explicit CudaBackend(loom::ComponentContext& context);
  /// Direct construction for tests and benchmarks. Throws loom::UnsupportedError without a GPU.
  explicit CudaBackend(int device = 0, bool tf32 = false);
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  loom::Device device() const override { return loom::Device{loom::DeviceType::cuda, device_index_}; }
  int threads() const override { return 1; }
  void* allocate(size_t bytes) override;
  void deallocate(void* data) override;
  void copy_from_host(void* device_dst, const void* host_src, size_t bytes) override;
  void copy_to_host(void* host_dst, const void* device_src, size_t bytes) override;
  void synchronize() override;

  void fill(const loom::Tensor& x, double value) override;
  void zero(const loom::Tensor& x) override;
  void copy(const loom::Tensor& src, const loom::Tensor& dst) override;
  void cast(const loom::Tensor& src, const loom::Tensor& dst) override;

  void gemm(const loom::Tensor& a, bool transpose_a, const loom::Tensor& b, bool transpose_b,
            const loom::Tensor& c, float alpha, float beta) override;

  void bias_add(const loom::Tensor& x, const loom::Tensor& bias) override;
  void bias_grad(const loom::Tensor& dy, const loom::Tensor& dbias) override;
  void bias_gelu_forward(const loom::Tensor& x, const loom::Tensor& bias, const loom::Tensor& y,
                         loom::Gelu variant) override;
  void bias_gelu_backward(const loom::Tensor& dy, const loom::Tensor& x, const loom::Tensor& bias,
                          const loom::Tensor& dx, const loom::Tensor& dbias, loom::Gelu variant) override;
  void tanh_forward(const loom::Tensor& x, const loom::Tensor& y) override;
  void tanh_backward(const loom::Tensor& dy, const loom::Tensor& y, const loom::Tensor& dx) override;
  void add(const loom::Tensor& a, const loom::Tensor& b, const loom::Tensor& out) override;
  void axpby(float alpha, const loom::Tensor& x, float beta, const loom::Tensor& y) override;

  void layernorm_forward(const loom::Tensor& x, const loom::Tensor& gamma, const loom::Tensor& beta,
                         float eps, const loom::Tensor& y, const loom::Tensor& mean,
                         const loom::Tensor& rstd) override;
  void layernorm_backward(const loom::Tensor& dy, const loom::Tensor& x, const loom::Tensor& gamma,
                          const loom::Tensor& mean, const loom::Tensor& rstd, const loom::Tensor& dx,
                          const loom::Tensor& dgamma, const loom::Tensor& dbeta, bool accumulate_dx) override;
  void additive_key_mask(const loom::Tensor& attention_mask, const loom::Tensor& out) override;
  void softmax_forward(const loom::Tensor& scores, const loom::Tensor& key_mask, float scale,
                       const loom::Tensor& probs) override;
  void softmax_backward(const loom::Tensor& dprobs, const loom::Tensor& probs, float scale,
                        const loom::Tensor& dscores) override;

  void dropout_forward(const loom::Tensor& x, const loom::Tensor& y, float p, uint64_t seed,
                       uint64_t offset) override;
  void dropout_backward(const loom::Tensor& dy, const loom::Tensor& dx, float p, uint64_t seed,
                        uint64_t offset) override;

  void embedding_gather(const loom::Tensor& table, const loom::Tensor& ids, const loom::Tensor& out,
                        bool accumulate) override;
  void embedding_scatter_add(const loom::Tensor& dout, const loom::Tensor& ids,
                             const loom::Tensor& dtable) override;

  void cross_entropy(const loom::Tensor& logits, const loom::Tensor& targets, int64_t num_classes,
                     int64_t ignore_index, float grad_scale, const loom::Tensor& mean_loss,
                     const loom::Tensor& dlogits, const loom::Tensor& row_loss,
                     const loom::Tensor& row_correct) override;

  void sum_squares(const loom::Tensor& x, const int64_t* segment_offsets, size_t num_segments,
                   const loom::Tensor& out) override;
  void global_norm(const loom::Tensor& x, const loom::Tensor& out) override;
  void check_finite(const loom::Tensor& x, const loom::Tensor& flag) override;

  bool fused_attention(int64_t head_dim, int64_t max_seq) const override;
  void attention_forward(const loom::Tensor& q, const loom::Tensor& k, const loom::Tensor& v,
                         const loom::Tensor& key_mask, float scale, float p, uint64_t seed, uint64_t offset,
                         const loom::Tensor& ctx, const loom::Tensor& lse) override;
  void attention_backward(const loom::Tensor& d_ctx, const loom::Tensor& q, const loom::Tensor& k,
                          const loom::Tensor& v, const loom::Tensor& ctx, const loom::Tensor& lse,
                          const loom::Tensor& key_mask, float scale, float p, uint64_t seed, uint64_t offset,
                          const loom::Tensor& dq, const loom::Tensor& dk, const loom::Tensor& dv,
                          const loom::Tensor& delta) override;

  // WindowedAttention (named interface; attention_forward.cu, attention_backward.cu): the fused
  // attention kernels of both paths with the band |i − j| ≤ window, walking only the tiles the
  // band meets (attention_band.cuh); a window reaching every key runs FusedAttention's kernels.
  void windowed_attention_forward(const loom::Tensor& q, const loom::Tensor& k, const loom::Tensor& v,
                                  const loom::Tensor& key_mask, float scale, int64_t window, float p,
                                  uint64_t seed, uint64_t offset, const loom::Tensor& ctx,
                                  const loom::Tensor& lse) override;
  void windowed_attention_backward(const loom::Tensor& d_ctx, const loom::Tensor& q, const loom::Tensor& k,
                                   const loom::Tensor& v, const loom::Tensor& ctx, const loom::Tensor& lse,
                                   const loom::Tensor& key_mask, float scale, int64_t window, float p,
                                   uint64_t seed, uint64_t offset, const loom::Tensor& dq,
                                   const loom::Tensor& dk, const loom::Tensor& dv,
                                   const loom::Tensor& delta) override;

  // RotaryEmbedding (named interface; rotary_embedding.cu): one kernel over the head rows, the f32
  // cos/sin factors of each (position, pair) computed on the host as backend/cpu computes them
  // and kept on the device per (theta, d).
  void rotary_apply(const loom::Tensor& x, const loom::Tensor& y, double theta, bool inverse) override;

  // PackedAttention (named interface; packed_attention.cu, rotary_embedding.cu): the Tensor-Core
  // attention kernels once over every sequence (flash_packed.cuh), or, where they do not serve,
  // WindowedAttention's CUDA-core kernels on each sequence in turn; and the rotary kernel reading
  // each row's position, checked on the device.
  void packed_attention_forward(const loom::Tensor& q, const loom::Tensor& k, const loom::Tensor& v,
                                const loom::Tensor& starts, const int32_t* starts_host, int64_t max_sequence,
                                float scale, int64_t window, float p, uint64_t seed, uint64_t offset,
                                const loom::Tensor& ctx, const loom::Tensor& lse) override;
  void packed_attention_backward(const loom::Tensor& d_ctx, const loom::Tensor& q, const loom::Tensor& k,
                                 const loom::Tensor& v, const loom::Tensor& ctx, const loom::Tensor& lse,
                                 const loom::Tensor& starts, const int32_t* starts_host, int64_t max_sequence,
                                 float scale, int64_t window, float p, uint64_t seed, uint64_t offset,
                                 const loom::Tensor& dq, const loom::Tensor& dk, const loom::Tensor& dv,
                                 const loom::Tensor& delta) override;
  void packed_rotary_apply(const loom::Tensor& x, const loom::Tensor& y, const loom::Tensor& positions,
                           double theta, bool inverse) override;

  // GatedGelu (named interface; gated_gelu.cu): GeGLU forward and backward in one element-wise
  // pass each, with bias + GELU's GELU forms (gelu_forms.cuh).
  void gated_gelu_forward(const loom::Tensor& x, const loom::Tensor& y, loom::Gelu variant) override;
  void gated_gelu_backward(const loom::Tensor& dy, const loom::Tensor& x, const loom::Tensor& dx,
                           loom::Gelu variant) override;

  // ResidualLayerNorm (named interface; residual_layernorm.cu): bias + dropout + residual +
  // LayerNorm in one row kernel per direction; rows of at most 16384 columns.
  void residual_layernorm_forward(const loom::Tensor& y, const loom::Tensor& bias,
                                  const loom::Tensor& residual, float p, uint64_t seed, uint64_t offset,
                                  const loom::Tensor& gamma, const loom::Tensor& beta, float eps,
                                  const loom::Tensor& sum, const loom::Tensor& out,
                                  const loom::Tensor& out_compute, const loom::Tensor& mean,
                                  const loom::Tensor& rstd) override;
  void residual_layernorm_backward(const loom::Tensor& d_out, const loom::Tensor& sum,
                                   const loom::Tensor& gamma, const loom::Tensor& mean,
                                   const loom::Tensor& rstd, float p, uint64_t seed, uint64_t offset,
                                   const loom::Tensor& d_sum, const loom::Tensor& d_branch,
                                   const loom::Tensor& dgamma, const loom::Tensor& dbeta,
                                   const loom::Tensor& dbias) override;
  // ResidualLayerNormBackwardCopy (named interface; residual_layernorm.cu): the backward's row
  // kernel also stores d_branch's 16-bit copy.
  void residual_layernorm_backward_copy(const loom::Tensor& d_out, const loom::Tensor& sum,
                                        const loom::Tensor& gamma, const loom::Tensor& mean,
                                        const loom::Tensor& rstd, float p, uint64_t seed, uint64_t offset,
                                        const loom::Tensor& d_sum, const loom::Tensor& d_branch,
                                        const loom::Tensor& d_branch_compute, const loom::Tensor& dgamma,
                                        const loom::Tensor& dbeta, const loom::Tensor& dbias) override;

  // LinearBias (named interface; gemm.cpp): one cuBLASLt product whose BIAS epilogue adds the f32
  // bias before the one rounding to y's type; gemm, bias_add and cast where cuBLASLt has no
  // algorithm for it.
  void linear_bias_forward(const loom::Tensor& x, const loom::Tensor& w, const loom::Tensor& bias,
                           const loom::Tensor& y, const loom::Tensor& scratch) override;

  // BiasGradCopy (named interface; bias_activations.cu): bias_grad's column-sum pass also stores
  // each element's 16-bit copy as it reads it.
  void bias_grad_copy(const loom::Tensor& dy, const loom::Tensor& dbias, const loom::Tensor& dy_compute) override;

  // GemmExtentAlignment (named interface): 8 for bf16/f16 operands, whose cuBLASLt Tensor-Core
  // kernels load 16-byte vectors (an extent such as the vocabulary's 30,522 leaves them `align2`
  // kernels); 1 for f32, where no profile has asked for it.
  int64_t gemm_extent_multiple(loom::DType operand) const override {
    return operand == loom::DType::bf16 || operand == loom::DType::f16 ? 8 : 1;
  }

  // BiasGeluBackwardCopy (named interface; bias_activations.cu): the bias + GELU backward kernel
  // stores dx's 16-bit copy in the pass that computes dx.
  void bias_gelu_backward_copy(const loom::Tensor& dy, const loom::Tensor& x, const loom::Tensor& bias,
                               const loom::Tensor& dx, const loom::Tensor& dx_compute, const loom::Tensor& dbias,
                               loom::Gelu variant) override;

  /// Name and SM count from cudaGetDeviceProperties, the dense bf16 peak (device_peak.cpp) and
  /// the allocator's high-water mark.
  loom::DeviceInfo device_info() const override;

  // OptimizerSteps (named interface; optimizer_steps.cu): NVLAMB, AdamW and SGD as multi-tensor
  // passes over GPU memory, nothing read back but read_report.
  loom::OptimizerPlan* create_plan(const loom::OptimizerSegment* segments, size_t count,
                                   size_t total_elements) override;
  void destroy_plan(loom::OptimizerPlan* plan) override;
  void gradient_norm(loom::OptimizerPlan& plan, const loom::Tensor& grads,
                     const loom::Tensor& nonfinite_flag) override;
  void adamw_step(loom::OptimizerPlan& plan, const loom::Tensor& params, const loom::Tensor& grads,
                  const loom::Tensor& exp_avg, const loom::Tensor& exp_avg_sq,
                  const loom::GradientScaling& scaling, const loom::AdamConstants& constants,
                  double lr) override;
  void lamb_step(loom::OptimizerPlan& plan, const loom::Tensor& params, const loom::Tensor& grads,
                 const loom::Tensor& exp_avg, const loom::Tensor& exp_avg_sq,
                 const loom::GradientScaling& scaling, const loom::AdamConstants& constants,
                 double lr) override;
  void sgd_step(loom::OptimizerPlan& plan, const loom::Tensor& params, const loom::Tensor& grads,
                const loom::Tensor& momentum_buffer, const loom::GradientScaling& scaling,
                const loom::SgdConstants& constants, double lr) override;
  loom::OptimizerStepReport read_report(const loom::OptimizerPlan& plan) override;
  // OptimizerWorkingCopy (named interface; optimizer_steps.cu): the update kernels store each
  // final weight's bf16/f16 value as well.
  void set_working_copy(loom::OptimizerPlan& plan, const loom::Tensor& working) override;

  /// TransferCounter: every time the host waited for this GPU — copy_to_host, synchronize, the
  /// sync_check waits (synchronizations) and a reuse of the staging area whose upload may still be
  /// queued (a synchronization) — and copy_from_host calls.
  loom::TransferCounts transfer_counts() const override;

  /// OpProfiler: CUDA events around each op on the stream, copies included (cuda_op_timer.hpp);
  /// take_op_profile waits for the last event recorded.
  void set_op_profiling(bool on) override;
  size_t take_op_profile(loom::OpFamilyTime* totals, size_t count) override;

  /// MemoryUsage: the caching allocator's figures; its size classes make `allocated` exceed
  /// `requested` by up to a quarter per block.
  loom::MemoryUsageBytes memory_usage() const override { return allocator_.usage(); }

  // ---- beyond the interface: for tests and `loom bench` ---------------------------------------
  /// The stream every op is enqueued on.
  cudaStream_t stream() const { return stream_; }
  /// The largest number of bytes ever handed out by allocate() (and internal scratch) at once.
  size_t peak_allocated_bytes() const { return allocator_.peak_allocated_bytes(); }
  /// cudaMalloc calls so far (the allocator's cache misses).
  uint64_t device_mallocs() const { return allocator_.device_mallocs(); }
  bool tf32() const { return tf32_; }
  /// linear_bias_forward calls served by cuBLASLt's BIAS epilogue (the rest ran the unfused ops).
  uint64_t fused_linear_bias_calls() const { return fused_linear_bias_calls_; }
  /// Debug mode: every op is waited for and checked before the next one starts (and before
  /// synchronize and the copies), so a device fault names the op that caused it instead of
  /// surfacing at a later synchronising call. Costs one synchronisation per op.
  void set_sync_check(bool on) { sync_check_ = on; }
  /// Whether fused attention may run on the Tensor-Core kernels (flash_attention.hpp) where they
  /// serve the call; false keeps every call on the CUDA-core kernels (option
  /// `tensor_core_attention`, default true).
  void set_tensor_core_attention(bool on) { tensor_core_attention_ = on; }
  bool tensor_core_attention() const { return tensor_core_attention_; }
  bool sync_check() const { return sync_check_; }
  /// Why this device was chosen (device_placement.hpp), for the log.
  const std::string& placement() const { return placement_; }

  // ---- shared by the op files -----------------------------------------------------------------
  /// Argument checks for `op` that require views on this backend's GPU.
  /// Also makes this backend's device current on the calling thread (the host may call ops from
  /// another thread than the one that constructed the backend).
  /// With sync_check, first waits for the previous op and throws naming it if it faulted.
  /// While profiling, the op is timed until what this returns goes out of scope: an op begins with
  /// `const auto check = checks("op");`.
  loom_backend::TimedChecks checks(const char* op) const {
    bind_device();
    if (sync_check_) {
      check_previous_op(op);
      unchecked_op_ = op;
    }
    return loom_backend::TimedChecks(op, device(), timing_);
  }
  /// An op's preamble, written once (op_preamble.cuh): checks(op), then `contract(check)`, which
  /// returns the op's geometry, then — unless the geometry leaves nothing to launch —
  /// `body(geometry, S...)` with S the storage type (float, BFloat16, Half) of each dtype of
  /// `storage` (or `body(geometry)` for an op of f32 views only), then check_launch(op).
  template <typename Contract, size_t N, typename Body>
  void run_op(const char* op, Contract&& contract, const DType (&storage)[N], Body&& body) const;
  template <typename Contract, typename Body>
  void run_op(const char* op, Contract&& contract, Body&& body) const;
  /// Device scratch of at least `bytes`, 256-byte aligned, valid until the next call (grow-only:
  /// it allocates only the first time an op needs more than before).
  void* scratch(size_t bytes);
  /// Pinned host memory of at least `bytes` for staging small transfers. Waits until the previous
  /// transfer through it has completed before handing it out again.
  void* staging(size_t bytes);
  /// Marks the end of the transfers enqueued from staging() (recorded on the stream).
  void staging_enqueued();
  /// Where kernels record the first invalid id/target (device memory; index_checks.cuh).
  DeviceErrorRecord* error_record() const { return error_record_; }

 private:
  /// Picks the device and creates the stream, the event and the GEMM engine.
  void acquire(int device);
  /// cudaSetDevice(device_index_) unless it is already current on this thread.
  void bind_device() const;
  /// sync_check: waits for the stream and throws LOOM_E_DEVICE naming the last op entered through
  /// checks() if the device reports an error; `next` is what was about to run.
  void check_previous_op(const char* next) const;
  /// Waits for the stream, reading the device error record on the way; returns the CUDA status.
  cudaError_t wait_for_stream() const;
  /// After wait_for_stream(): throws the recorded invalid id/target, if any, naming the wait point
  /// `where`, and clears the record.
  void report_device_error(const char* where) const;
  /// Scales c by beta (or zeroes it for beta = 0): the K = 0 case of gemm. Any strides.
  void scale_strided(const loom::Tensor& c, float beta);
  /// residual_layernorm_backward's kernels for `shape` (checked by the caller's contract), with
  /// d_branch's 16-bit copy when d_branch_compute is given (residual_layernorm.cu).
  void enqueue_residual_layernorm_backward(const char* op, const loom_backend::LayerNormRows& shape,
                                           const loom::Tensor& d_out, const loom::Tensor& sum,
                                           const loom::Tensor& gamma, const loom::Tensor& mean,
                                           const loom::Tensor& rstd, float p, uint64_t seed, uint64_t offset,
                                           const loom::Tensor& d_sum, const loom::Tensor& d_branch,
                                           const loom::Tensor& d_branch_compute, const loom::Tensor& dgamma,
                                           const loom::Tensor& dbeta, const loom::Tensor& dbias);
  /// bias_gelu_backward with an optional 16-bit copy of dx (dx_compute absent: none): run_op for
  /// `op` with `contract(check)`, which returns the columns of x (bias_activations.cu).
  template <typename Contract>
  void gelu_gradient(const char* op, Contract&& contract, const loom::Tensor& dy, const loom::Tensor& x,
                     const loom::Tensor& bias, const loom::Tensor& dx, const loom::Tensor& dx_compute,
                     const loom::Tensor& dbias, loom::Gelu variant);
  /// attention_forward (`windowed` false: FusedAttention's contract, no band) and
  /// windowed_attention_forward (its contract, the band of `window`) as `op` (attention_forward.cu).
  void enqueue_attention_forward(const char* op, const loom::Tensor& q, const loom::Tensor& k,
                                 const loom::Tensor& v, const loom::Tensor& key_mask, float scale,
                                 bool windowed, int64_t window, float p, uint64_t seed, uint64_t offset,
                                 const loom::Tensor& ctx, const loom::Tensor& lse);
  /// attention_backward and windowed_attention_backward as `op`, likewise (attention_backward.cu).
  void enqueue_attention_backward(const char* op, const loom::Tensor& d_ctx, const loom::Tensor& q,
                                  const loom::Tensor& k, const loom::Tensor& v, const loom::Tensor& ctx,
                                  const loom::Tensor& lse, const loom::Tensor& key_mask, float scale,
                                  bool windowed, int64_t window, float p, uint64_t seed, uint64_t offset,
                                  const loom::Tensor& dq, const loom::Tensor& dk, const loom::Tensor& dv,
                                  const loom::Tensor& delta);
  /// The empty-band flags of a windowed call (attention_band.cuh), made on the stream in the
  /// scratch area; null when the call has no band or no key mask (attention_band.cu).
  const uint8_t* empty_band_flags(const float* mask, const AttentionShape& shape);
  /// A checked packed call's sequences for the one-launch kernels, with room in the scratch area
  /// for their first dropout elements (packed_attention.cu).
  PackedLaunch packed_launch(const loom::Tensor& starts, const loom_backend::PackedDims& dims, int64_t window);
  /// The f32 factors of rotary_apply on the device: [rows ≥ seq][cos of the d/2 pairs, then their
  /// sines], made on the host (loom_backend::rotary_factors) and uploaded through the staging area
  /// the first time a (theta, d) is asked for, and again when a longer sequence comes
  /// (rotary_embedding.cu).
  const float* rotary_factors(double theta, int64_t head_dim, int64_t seq);
  /// cuBLASLt's column-major problem for the row-major c = op(a)·op(b) of validated operands with
  /// row strides lda, ldb, ldc (pointers, batches, alpha and beta left to the caller).
  ColumnMajorGemm column_major(DType ab, bool transpose_a, bool transpose_b, DType c,
                               const loom_backend::GemmProduct& product, int64_t lda, int64_t ldb,
                               int64_t ldc) const;

  int device_index_ = 0;
  bool tf32_ = false;
  bool sync_check_ = false;
  bool tensor_core_attention_ = true;
  uint64_t fused_linear_bias_calls_ = 0;
  mutable const char* unchecked_op_ = nullptr;  // sync_check: the op entered last, not yet waited for
  std::string placement_;
  loom::DeviceInfo info_{};  // filled by acquire(); the allocator's peak is read at each call
  cudaStream_t stream_ = nullptr;
  cudaEvent_t staging_done_ = nullptr;
  CachingAllocator allocator_;
  std::unique_ptr<CublasLtGemm> gemm_;
  void* scratch_ = nullptr;
  size_t scratch_bytes_ = 0;
  void* staging_ = nullptr;
  size_t staging_bytes_ = 0;
  /// rotary_factors' tables, one per (theta, head dim), in the allocator's memory.
  struct RotaryTable {
    double theta;
    int64_t head_dim, rows;
    float* data;
  };
  std::vector<RotaryTable> rotary_tables_;
  mutable bool staging_pending_ = false;         // an upload through staging may still be queued
  DeviceErrorRecord* error_record_ = nullptr;    // device memory, zeroed at construction
  DeviceErrorRecord* error_snapshot_ = nullptr;  // pinned host copy, read at each wait
  mutable std::atomic<uint64_t> device_to_host_copies_{0};
  mutable std::atomic<uint64_t> synchronizations_{0};
  std::atomic<uint64_t> host_to_device_copies_{0};
  std::unique_ptr<loom_backend::OpTimer> op_timer_;  // created when profiling is first switched on
  loom_backend::OpTimer* timing_ = nullptr;          // op_timer_ while profiling, else nullptr
};

/// Blocks of `threads` for a grid-stride loop over `n` items (at least 1, capped so huge inputs
/// loop instead of launching millions of blocks).
inline unsigned grid_for(int64_t n, int threads) {
  const int64_t blocks = (n + threads - 1) / threads;
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks > 65536 ? 65536 : blocks);
}

}  // namespace loom_cuda
