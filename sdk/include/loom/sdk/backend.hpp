// Backend: device memory and the op set the BERT blocks are written in.
//
// Conventions for every op (each op's comment states what is specific to it):
// - Arguments are Tensor views on this backend's device. Row-wise ops treat the LAST dimension
//   as the feature dimension C and every leading dimension as rows N = numel / C. Unless an op
//   says otherwise views must be contiguous. Ops validate shapes, dtypes and devices and throw
//   loom::Error naming the op and the argument ("layernorm_forward: gamma is f32[23], expected
//   f32[24]").
// - dtypes: "f32|bf16" means either, and wherever bf16 is allowed f16 (IEEE binary16, the
//   compute dtype of fp16-mixed) is too; math is f32 whatever the storage, and a 16-bit output is
//   rounded to nearest even once. Gradients of activations are f32 unless stated.
// - OVERWRITE ops write every element of their output. ACCUMULATE ops add into their output
//   (llm.c style): every gradient of a PARAMETER (dW, dbias, dgamma, dbeta, dtable) accumulates,
//   so residual fan-out, tied weights and gradient accumulation need no bookkeeping; the trainer
//   zeroes the flat gradient buffer once per optimizer step.
// - "may alias X" means the output may be the very same view as X (in place); any other overlap
//   between inputs and outputs is undefined.
// - Ops never allocate memory once warm (a library's internal caches, e.g. oneDNN primitives, and
//   scratch a backend grows on an op's first call and then reuses, excepted)
//   and are deterministic for a fixed thread count; dropout does not depend on it at all.
// - Ops are asynchronous on devices that are: call synchronize() before reading results on the
//   host through other means than copy_to_host (which synchronizes).
// - Invalid VALUES in device memory (an embedding id, a cross-entropy target out of range) are
//   errors too, but a device backend need not read them back at the call to find them: it may
//   report them at its next synchronisation (copy_to_host or synchronize) instead, as the same
//   loom::Error naming the op and position ("embedding_gather: ids[7] = 30522 is outside
//   [0, 30522)"), once. The outputs of the op that found them are then unspecified. backend/cpu
//   throws at the call.
#pragma once

#include <cstddef>
#include <cstdint>

#include "loom/sdk/plugin_abi.h"
#include "loom/sdk/tensor.hpp"
#include "loom/sdk/version.hpp"

LOOM_SDK_NAMESPACE_BEGIN

/// The GELU formula: `erf` = x·Φ(x) (Hugging Face "gelu"); `tanh` = the approximation
/// 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))) ("gelu_new", "gelu_pytorch_tanh").
enum class Gelu : int32_t { erf = 0, tanh = 1 };

/// Additive mask value for masked keys: the lowest finite f32, as Hugging Face BERT uses.
inline constexpr float kMaskedKey = -3.4028234663852886e38f;

class Backend {
 public:
  static constexpr loom_component_kind kKind = LOOM_KIND_BACKEND;
  static constexpr unsigned kInterfaceVersion = 1;
  static constexpr const char* kRecipeTable = "backend";
  /// Every allocation is aligned to at least this many bytes.
  static constexpr size_t kAlignment = 64;

  virtual ~Backend() = default;

  // ---- device and memory ----------------------------------------------------------------------

  /// The device this backend's memory and ops live on.
  virtual Device device() const = 0;
  /// Threads the ops use (CPU: the `threads` option; GPU: 1, the host thread).
  virtual int threads() const = 0;
  /// `bytes` of device memory aligned to kAlignment, uninitialised; nullptr for 0 bytes. Throws
  /// (LOOM_E_OUT_OF_MEMORY) when the device is full.
  virtual void* allocate(size_t bytes) = 0;
  /// Frees memory from allocate(); nullptr is ignored.
  virtual void deallocate(void* data) = 0;
  /// Host → device copy of `bytes`.
  virtual void copy_from_host(void* device_dst, const void* host_src, size_t bytes) = 0;
  /// Device → host copy of `bytes`; returns after the data is on the host (synchronizes).
  virtual void copy_to_host(void* host_dst, const void* device_src, size_t bytes) = 0;
  /// Waits for every op issued so far.
  virtual void synchronize() = 0;

  // ---- data movement --------------------------------------------------------------------------

  /// OVERWRITE x (any dtype, any strides) with `value` converted to x's dtype.
  virtual void fill(const Tensor& x, double value) = 0;
  /// OVERWRITE x (any dtype, any strides) with zeros.
  virtual void zero(const Tensor& x) = 0;
  /// OVERWRITE dst with src: same shape and dtype, ANY strides on both sides, so a permuted or
  /// narrowed view copies into a dense one and back (head split/merge, column selection).
  virtual void copy(const Tensor& src, const Tensor& dst) = 0;
  /// OVERWRITE dst with src converted: f32|bf16|f16 → f32|bf16|f16, same shape, contiguous.
  virtual void cast(const Tensor& src, const Tensor& dst) = 0;

  // ---- linear algebra -------------------------------------------------------------------------

  /// OVERWRITE (beta = 0) or blend c = alpha·op(a)·op(b) + beta·c, row-major.
  /// Matrices are the last two dimensions: op(a) is [M, K] (a is [M, K], or [K, M] with
  /// transpose_a), op(b) is [K, N] (b is [K, N], or [N, K] with transpose_b), c is [M, N].
  /// Up to two leading batch dimensions (ndim 2..4) with equal extents in a, b and c form a
  /// strided batch; a batch stride of 0 in a or b broadcasts that operand. Inside each matrix the
  /// last dimension has stride 1 and the row stride (leading dimension) is free, so per-head
  /// views into a fused QKV buffer need no copy. a and b: both f32 (c f32), both bf16 (c f32 or
  /// bf16) or both f16 (c f32 or f16); accumulation is f32. beta = 0 never reads c. c must not overlap a or b.
  /// The linear layer y = x·Wᵀ is gemm(x, false, W, true, y, 1, 0); its weight gradient
  /// dW += dyᵀ·x is gemm(dy, true, x, false, dW, 1, 1).
  virtual void gemm(const Tensor& a, bool transpose_a, const Tensor& b, bool transpose_b, const Tensor& c,
                    float alpha, float beta) = 0;

  // ---- bias, activations, residual ------------------------------------------------------------

  /// x[n, :] += bias[n mod P, :] in place. x: f32 [..., C]; bias: f32 [C] (P = 1) or [P, C] with
  /// N divisible by P — P = T adds position embeddings wpe[0:T] to a [B, T, C] activation.
  virtual void bias_add(const Tensor& x, const Tensor& bias) = 0;
  /// ACCUMULATE dbias[p, :] += Σ_{n mod P = p} dy[n, :]. dy: f32 [..., C]; dbias: f32 [C] or [P, C]
  /// (the column sums of dy: the gradient of bias_add and of a linear layer's bias).
  virtual void bias_grad(const Tensor& dy, const Tensor& dbias) = 0;
  /// OVERWRITE y = gelu(x + bias). x, y: f32|bf16 [..., C]; bias: f32 [C] or absent (plain
  /// GELU). y may alias x (same dtype).
  virtual void bias_gelu_forward(const Tensor& x, const Tensor& bias, const Tensor& y, Gelu variant) = 0;
  /// dx = dy ⊙ gelu'(x + bias), OVERWRITE; dbias += Σ_rows dx, ACCUMULATE (when present).
  /// dy, dx: f32; x: the forward input, f32|bf16; bias: f32 [C] or absent; dbias: f32 [C] or
  /// absent. dx may alias dy.
  virtual void bias_gelu_backward(const Tensor& dy, const Tensor& x, const Tensor& bias, const Tensor& dx,
                                  const Tensor& dbias, Gelu variant) = 0;
  /// OVERWRITE y = tanh(x) (pooler). x, y: f32 same shape; y may alias x.
  virtual void tanh_forward(const Tensor& x, const Tensor& y) = 0;
  /// OVERWRITE dx = dy ⊙ (1 − y²) where y is the forward OUTPUT. f32; dx may alias dy.
  virtual void tanh_backward(const Tensor& dy, const Tensor& y, const Tensor& dx) = 0;
  /// OVERWRITE out = a + b (residual add). f32|bf16 each, same shape; out may alias a or b.
  virtual void add(const Tensor& a, const Tensor& b, const Tensor& out) = 0;
  /// y = alpha·x + beta·y in place (beta = 0 never reads y). f32, same shape; x may alias y
  /// (then y *= alpha + beta). Accumulating an activation gradient is axpby(1, dx, 1, dy_total).
  virtual void axpby(float alpha, const Tensor& x, float beta, const Tensor& y) = 0;

  // ---- normalisation and attention ------------------------------------------------------------

  /// OVERWRITE y = (x − mean)·rstd·gamma + beta per row, rstd = 1/√(var + eps) with the biased
  /// variance (as torch.nn.LayerNorm). x, y: f32|bf16 [..., C]; gamma, beta: f32 [C];
  /// mean, rstd: f32 [N] (saved for backward). y may alias x (same dtype).
  virtual void layernorm_forward(const Tensor& x, const Tensor& gamma, const Tensor& beta, float eps,
                                 const Tensor& y, const Tensor& mean, const Tensor& rstd) = 0;
  /// Backward of layernorm_forward. dgamma += Σ_rows dy·x̂ and dbeta += Σ_rows dy, ACCUMULATE.
  /// dx: OVERWRITE when accumulate_dx is false, dx += ... when true (residual fan-out).
  /// dy, dx: f32 [..., C]; x: the forward input f32|bf16; gamma: f32 [C]; mean, rstd: f32 [N]
  /// from the forward; dgamma, dbeta: f32 [C]. dx may alias dy only when accumulate_dx is false.
  virtual void layernorm_backward(const Tensor& dy, const Tensor& x, const Tensor& gamma, const Tensor& mean,
                                  const Tensor& rstd, const Tensor& dx, const Tensor& dgamma,
                                  const Tensor& dbeta, bool accumulate_dx) = 0;
  /// OVERWRITE out[b, t] = 0 where attention_mask[b, t] ≠ 0, else kMaskedKey. attention_mask:
  /// i32|i64|f32 [B, T] (Hugging Face: 1 = attend, 0 = padding); out: f32 [B, T].
  virtual void additive_key_mask(const Tensor& attention_mask, const Tensor& out) = 0;
  /// OVERWRITE probs = softmax over the last dim of (scale·scores + key_mask[b, key]).
  /// scores: f32|bf16 [B, H, Tq, Tk]; key_mask: f32 [B, Tk] additive (0 / kMaskedKey, from
  /// additive_key_mask) or absent (then scores may have any shape; rows are the last dim);
  /// probs: f32|bf16, same shape. probs may alias scores (same dtype). A row whose keys are all
  /// masked becomes uniform over its keys, as in PyTorch.
  virtual void softmax_forward(const Tensor& scores, const Tensor& key_mask, float scale,
                               const Tensor& probs) = 0;
  /// OVERWRITE dscores = scale·probs ⊙ (dprobs − Σ_row dprobs⊙probs), the gradient w.r.t. the
  /// raw scores of softmax_forward. dprobs, dscores: f32; probs: the forward output f32|bf16.
  /// dscores may alias dprobs.
  virtual void softmax_backward(const Tensor& dprobs, const Tensor& probs, float scale,
                                const Tensor& dscores) = 0;

  // ---- dropout --------------------------------------------------------------------------------

  /// OVERWRITE y = x·keep/(1 − p), where element e (row-major index in x) is kept unless
  /// philox_word(seed, offset + e) < dropout_threshold(p) (loom/sdk/philox.hpp). The mask is never
  /// stored: backward regenerates it from (seed, offset). Results do not depend on the thread
  /// count or the backend. x, y: f32|bf16 same shape; y may alias x; 0 ≤ p < 1 (p = 0 copies).
  /// Callers give each dropout site a disjoint range [offset, offset + numel).
  virtual void dropout_forward(const Tensor& x, const Tensor& y, float p, uint64_t seed, uint64_t offset) = 0;
  /// OVERWRITE dx = dy·keep/(1 − p) with the same mask as dropout_forward(p, seed, offset).
  /// f32; dx may alias dy.
  virtual void dropout_backward(const Tensor& dy, const Tensor& dx, float p, uint64_t seed,
                                uint64_t offset) = 0;

  // ---- embeddings and row gathers -------------------------------------------------------------

  /// out[i, :] = table[ids[i], :] (OVERWRITE), or out[i, :] += table[ids[i], :] when accumulate.
  /// table: f32 [V, C]; ids: i32|i64 with n elements (any shape, contiguous); out: f32 [..., C]
  /// with n rows. An id outside [0, V) is an error (on a device backend possibly reported at the
  /// next synchronisation: see the conventions above). Also gathers rows of any activation
  /// (masked MLM positions, [CLS] rows) when `table` is that activation seen as [rows, C].
  virtual void embedding_gather(const Tensor& table, const Tensor& ids, const Tensor& out,
                                bool accumulate) = 0;
  /// ACCUMULATE dtable[ids[i], :] += dout[i, :] (repeated ids add up; deterministic order).
  /// dout: f32 [..., C] with n rows; ids: i32|i64, n elements; dtable: f32 [V, C]. An id outside
  /// [0, V) is an error, reported as embedding_gather's is.
  virtual void embedding_scatter_add(const Tensor& dout, const Tensor& ids, const Tensor& dtable) = 0;

  // ---- loss -----------------------------------------------------------------------------------

  /// Softmax cross-entropy over rows, forward and (optionally) backward in one pass.
  /// logits: f32 [N, Cpad] where only the first `num_classes` columns are classes (the rest is
  /// vocab padding and never takes part); targets: i32|i64 [N], a row whose target equals
  /// `ignore_index` is ignored, any other target must be in [0, num_classes) (else an error, on a
  /// device backend possibly reported at the next synchronisation: see the conventions above).
  /// OVERWRITE mean_loss: f32 [1] = mean of −log softmax(logits)[target] over the R non-ignored
  /// rows (0 when R = 0). Optional outputs (absent = not computed), all OVERWRITE:
  /// dlogits: f32 [N, Cpad] = grad_scale·(softmax − onehot)/R on class columns, 0 on padding
  ///   columns and ignored rows; may alias logits (then the logits are consumed).
  /// row_loss: f32 [N], each row's loss (0 for ignored rows).
  /// row_correct: i32 [N], 1 when the row's first arg-max equals its target, else 0 (0 for
  ///   ignored rows): accuracy = Σ row_correct / R.
  virtual void cross_entropy(const Tensor& logits, const Tensor& targets, int64_t num_classes,
                             int64_t ignore_index, float grad_scale, const Tensor& mean_loss,
                             const Tensor& dlogits, const Tensor& row_loss, const Tensor& row_correct) = 0;

  // ---- reductions and checks ------------------------------------------------------------------

  /// OVERWRITE out[s] = Σ x[i]² for i in [segment_offsets[s], segment_offsets[s + 1]) (per-tensor
  /// norms for LAMB). x: f32 contiguous; segment_offsets: HOST array of num_segments + 1
  /// non-decreasing element offsets within x; out: f32 [num_segments]. Summed in f64.
  virtual void sum_squares(const Tensor& x, const int64_t* segment_offsets, size_t num_segments,
                           const Tensor& out) = 0;
  /// OVERWRITE out[0] = √(Σ x²) over all of x. x: f32 contiguous; out: f32 [1]. Summed in f64.
  virtual void global_norm(const Tensor& x, const Tensor& out) = 0;
  /// Sets flag[0] = 1 when x (f32|bf16|f16, contiguous) holds a NaN or ±infinity; otherwise
  /// leaves flag untouched, so one flag (i32 [1], zeroed by the caller) collects many checks.
  virtual void check_finite(const Tensor& x, const Tensor& flag) = 0;
};

/// Owning device allocation of a Backend: frees itself; move-only. Not part of the ABI (plain
/// header code on either side of the boundary).
class Buffer {
 public:
  Buffer() = default;
  /// Allocates `bytes` on `backend`, which must outlive the buffer.
  Buffer(Backend& backend, size_t bytes)
      : backend_(&backend), data_(backend.allocate(bytes)), bytes_(bytes) {}
  Buffer(Buffer&& other) noexcept : backend_(other.backend_), data_(other.data_), bytes_(other.bytes_) {
    other.data_ = nullptr;
    other.bytes_ = 0;
  }
  Buffer& operator=(Buffer&& other) noexcept {
    if (this != &other) {
      release();
      backend_ = other.backend_;
      data_ = other.data_;
      bytes_ = other.bytes_;
      other.data_ = nullptr;
      other.bytes_ = 0;
    }
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { release(); }

  /// Start of the allocation (nullptr when empty).
  void* data() const noexcept { return data_; }
  /// Size in bytes.
  size_t bytes() const noexcept { return bytes_; }
  /// A contiguous view of the start of the buffer with `shape`; throws when it does not fit.
  Tensor view(DType dtype, std::initializer_list<int64_t> shape) const {
    Tensor t = Tensor::contiguous(data_, dtype, shape, backend_ != nullptr ? backend_->device() : Device{});
    if (t.nbytes() > bytes_)
      throw Error("Buffer::view: " + t.describe() + " needs " + std::to_string(t.nbytes()) +
                  " bytes, buffer has " + std::to_string(bytes_));
    return t;
  }

 private:
  void release() noexcept {
    if (backend_ != nullptr && data_ != nullptr) backend_->deallocate(data_);
    data_ = nullptr;
  }
  Backend* backend_ = nullptr;
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

LOOM_SDK_NAMESPACE_END
