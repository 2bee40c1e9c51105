// backend/cpu: the Backend op set on the host CPU, fp32 everywhere and bf16/f16 where the SDK allows.
//
// Threads: one OpenMP pool — the same runtime Debian's oneDNN is built with (libgomp) — sized by
// the `threads` option. Our loops run with num_threads(threads) and every oneDNN call runs with
// omp max threads = threads, so op threads and GEMM threads never oversubscribe the machine.
// Loops partition work by rows or columns so that every reduction has a fixed order: results do
// not depend on the thread count except inside oneDNN's GEMM. Each op lives in its own file
// (layernorm.cpp, softmax.cpp, ...); this class only holds the state they share.
#pragma once

#include <memory>
#include <vector>

#include "allocation_ledger.hpp"
#include "loom/sdk/backend.hpp"
#include "loom/sdk/ops/bias_gelu_backward_copy.hpp"
#include "loom/sdk/ops/bias_grad_copy.hpp"
#include "loom/sdk/ops/device_description.hpp"
#include "loom/sdk/ops/fused_attention.hpp"
#include "loom/sdk/ops/geglu.hpp"
#include "loom/sdk/ops/linear_bias.hpp"
#include "loom/sdk/ops/memory_usage.hpp"
#include "loom/sdk/ops/op_profiler.hpp"
#include "loom/sdk/ops/optimizer_steps.hpp"
#include "loom/sdk/ops/optimizer_working_copy.hpp"
#include "loom/sdk/ops/packed_attention.hpp"
#include "loom/sdk/ops/residual_layernorm.hpp"
#include "loom/sdk/ops/residual_layernorm_backward_copy.hpp"
#include "loom/sdk/ops/rotary_embedding.hpp"
#include "loom/sdk/ops/windowed_attention.hpp"
#include "loom/sdk/plugin.hpp"
#include "loom_backend/argument_checks.hpp"
#include "loom_backend/op_timing.hpp"

namespace loom_cpu {

using loom::DType;
using loom_backend::ArgumentChecks;

class OneDnnGemm;

class CpuBackend final : public loom::Backend,
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
                         public loom::OpProfiler,
                         public loom::MemoryUsage {
 public:
  /// Reads options `threads` (default: every core this process may use) and `fused_attention`
  /// (default false: the reference attention op is exact but slower than the GEMM path here).
  explicit CpuBackend(loom::ComponentContext& context);
  /// Direct construction for tests and benchmarks; threads ≤ 0 means every core.
  explicit CpuBackend(int threads, bool fused_attention = false);
  ~CpuBackend() override;

  loom::Device device() const override { return loom::Device{}; }
  int threads() const override { return threads_; }
  void* allocate(size_t bytes) override;
  void deallocate(void* data) override;
  void copy_from_host(void* device_dst, const void* host_src, size_t bytes) override;
  void copy_to_host(void* host_dst, const void* device_src, size_t bytes) override;
  void synchronize() override {}

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

  // DeviceDescription, MemoryUsage and FusedAttention (named interfaces). device_info: "CPU", the thread
  // count, no known peak, the high-water mark of allocate(); memory_usage: allocate()'s live and peak
  // bytes, requested and rounded to kAlignment (cpu_backend.cpp); attention.cpp: the reference
  // implementation of fused attention.
  loom::DeviceInfo device_info() const override;
  loom::MemoryUsageBytes memory_usage() const override { return ledger_.usage(); }
  bool fused_attention(int64_t head_dim, int64_t max_seq) const override;
  void attention_forward(const loom::Tensor& q, const loom::Tensor& k, const loom::Tensor& v,
                         const loom::Tensor& key_mask, float scale, float p, uint64_t seed, uint64_t offset,
                         const loom::Tensor& ctx, const loom::Tensor& lse) override;
  void attention_backward(const loom::Tensor& d_ctx, const loom::Tensor& q, const loom::Tensor& k,
                          const loom::Tensor& v, const loom::Tensor& ctx, const loom::Tensor& lse,
                          const loom::Tensor& key_mask, float scale, float p, uint64_t seed, uint64_t offset,
                          const loom::Tensor& dq, const loom::Tensor& dk, const loom::Tensor& dv,
                          const loom::Tensor& delta) override;
  // WindowedAttention (named interface; attention.cpp): the same code with the key band
  // |i − j| ≤ window, so a window that covers every key gives FusedAttention's bits.
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

  // RotaryEmbedding (named interface; rotary_embedding.cpp): rotary position embeddings on head
  // views, in place or not.
  void rotary_apply(const loom::Tensor& x, const loom::Tensor& y, double theta, bool inverse) override;

  // PackedAttention (named interface; attention.cpp, rotary_embedding.cpp): the same attention code
  // on each sequence in turn, and the rotation at given positions.
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

  // GatedGelu (named interface; gated_gelu.cpp): GeGLU with the GELU forms of bias_gelu_*.
  void gated_gelu_forward(const loom::Tensor& x, const loom::Tensor& y, loom::Gelu variant) override;
  void gated_gelu_backward(const loom::Tensor& dy, const loom::Tensor& x, const loom::Tensor& dx,
                           loom::Gelu variant) override;

  // ResidualLayerNorm (named interface; residual_layernorm.cpp): bias + dropout + residual +
  // LayerNorm in one pass per row, bit for bit the separate ops.
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
  // ResidualLayerNormBackwardCopy (named interface): the backward, then cast.
  void residual_layernorm_backward_copy(const loom::Tensor& d_out, const loom::Tensor& sum,
                                        const loom::Tensor& gamma, const loom::Tensor& mean,
                                        const loom::Tensor& rstd, float p, uint64_t seed, uint64_t offset,
                                        const loom::Tensor& d_sum, const loom::Tensor& d_branch,
                                        const loom::Tensor& d_branch_compute, const loom::Tensor& dgamma,
                                        const loom::Tensor& dbeta, const loom::Tensor& dbias) override;

  // LinearBias (named interface; linear_bias.cpp): gemm into f32, bias_add and cast, the ops a
  // block would run itself, so the two paths agree bit for bit.
  void linear_bias_forward(const loom::Tensor& x, const loom::Tensor& w, const loom::Tensor& bias,
                           const loom::Tensor& y, const loom::Tensor& scratch) override;

  // BiasGradCopy (named interface; residual.cpp): bias_grad, then cast.
  void bias_grad_copy(const loom::Tensor& dy, const loom::Tensor& dbias,
                      const loom::Tensor& dy_compute) override;

  // BiasGeluBackwardCopy (named interface; activations.cpp): bias_gelu_backward, then cast.
  void bias_gelu_backward_copy(const loom::Tensor& dy, const loom::Tensor& x, const loom::Tensor& bias,
                               const loom::Tensor& dx, const loom::Tensor& dx_compute,
                               const loom::Tensor& dbias, loom::Gelu variant) override;

  // OptimizerSteps (named interface; optimizer_steps.cpp): the passes of libs/optimizer-passes,
  // bit for bit what the host optimizers of plugins/optimizers compute.
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
  // OptimizerWorkingCopy (named interface; optimizer_steps.cpp): each block of an update cast into
  // the working copy right after its weights are final, with cast's element loop.
  void set_working_copy(loom::OptimizerPlan& plan, const loom::Tensor& working) override;

  // OpProfiler (named interface): the wall time of each op, from its checks() to its return
  // (loom_backend/op_timing.hpp), and of copy_from_host/copy_to_host.
  void set_op_profiling(bool on) override { timing_ = on ? &op_timer_ : nullptr; }
  size_t take_op_profile(loom::OpFamilyTime* totals, size_t count) override {
    return op_timer_.take(totals, count);
  }

 private:
  /// Argument checks for `op` that require views in CPU memory; while profiling, they time the op
  /// until they go out of scope (`const auto check = checks("op");` at the top of the op).
  loom_backend::TimedChecks checks(const char* op) const {
    return loom_backend::TimedChecks(op, device(), timing_);
  }
  /// An op's preamble, written once (op_preamble.hpp): checks(op), then `contract(check)`, which
  /// returns the op's geometry, then `body(geometry, S...)` with S the storage type (float,
  /// BFloat16, Half) of each dtype of `storage` — or `body(geometry)` for an op of f32 views only.
  template <typename Contract, size_t N, typename Body>
  void run_op(const char* op, Contract&& contract, const DType (&storage)[N], Body&& body) const;
  template <typename Contract, typename Body>
  void run_op(const char* op, Contract&& contract, Body&& body) const;
  /// gemm with f16 a and b, or bf16 ones where oneDNN has no bf16 matmul (widened_gemm.cpp):
  /// widened to f32 in `widened_`, multiplied in f32.
  void gemm_widening(const loom::Tensor& a, bool transpose_a, const loom::Tensor& b, bool transpose_b,
                     const loom::Tensor& c, float alpha, float beta);
  /// Fused attention over the key band |i − j| ≤ window (window < 0: every key), checked as `op`
  /// (attention.cpp): attention_* and windowed_attention_* are this code.
  void banded_attention_forward(const char* op, const loom::Tensor& q, const loom::Tensor& k,
                                const loom::Tensor& v, const loom::Tensor& key_mask, float scale,
                                int64_t window, float p, uint64_t seed, uint64_t offset,
                                const loom::Tensor& ctx, const loom::Tensor& lse);
  void banded_attention_backward(const char* op, const loom::Tensor& d_ctx, const loom::Tensor& q,
                                 const loom::Tensor& k, const loom::Tensor& v, const loom::Tensor& ctx,
                                 const loom::Tensor& lse, const loom::Tensor& key_mask, float scale,
                                 int64_t window, float p, uint64_t seed, uint64_t offset,
                                 const loom::Tensor& dq, const loom::Tensor& dk, const loom::Tensor& dv,
                                 const loom::Tensor& delta);
  /// cos and sin of rotary_apply's angles for one theta and head dimension (rotary_embedding.cpp),
  /// [position][pair] interleaved, for positions below `positions`: kept between calls (every
  /// layer rotates q and k by the same angles; ModernBERT alternates two thetas) and grown to the
  /// longest sequence seen. At most kRotaryTables, the oldest replaced first.
  struct RotaryTable {
    double theta = 0;
    int64_t head_dim = 0, positions = 0;
    std::vector<float> cos_sin;
  };
  static constexpr size_t kRotaryTables = 4;
  const RotaryTable& rotary_table(double theta, int64_t head_dim, int64_t positions);
  std::vector<RotaryTable> rotary_tables_;
  size_t rotary_next_ = 0;  // the table a new (theta, head dimension) replaces once all are in use

  int threads_;
  bool fused_attention_;
  AllocationLedger ledger_;
  std::unique_ptr<OneDnnGemm> gemm_;
  /// f32 copies of widened GEMM operands a, b, c; grown to the largest product seen, then reused.
  std::vector<float> widened_[3];
  loom_backend::WallOpTimer op_timer_;
  loom_backend::OpTimer* timing_ = nullptr;  // &op_timer_ while profiling, else nullptr
};

/// Below this many elements an op runs on the calling thread: waking the pool costs more.
inline constexpr int64_t kParallelMinElements = 16384;

/// Every core this process may run on (sched_getaffinity), at least 1.
int available_cores();

}  // namespace loom_cpu
