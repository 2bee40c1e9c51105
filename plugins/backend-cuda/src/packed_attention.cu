// PackedAttention (loom/sdk/ops/packed_attention.hpp) on the GPU. Each sequence of a packed batch is
// WindowedAttention over a batch of one row of its length without a key mask (the header's
// definition, loom_backend::for_each_packed_sequence).
//
// Where the Tensor-Core kernels serve the call (16-bit heads of 64 or 128, rows 16-byte aligned,
// tensor_core_attention on), each kernel runs once over every sequence (flash_packed.cuh: a block
// per (sequence, head, tile of 64 rows), the grid sized for the longest sequence), as
// FlashAttention-2's variable-length path does; the blocks compute what the per-sequence launches
// of the same kernels compute, bit for bit. Otherwise (f32 storage, other head dimensions) the
// CUDA-core kernels run once per sequence, through this backend's windowed attention on the
// sequence's rows of the head views, its block of lse and delta and its first dropout element: S
// times the launches of one padded call, each over a grid sized for its own length. The starts the
// host loop reads come from the host copy the SDK hands over, so nothing waits for the GPU.
#include "attention_problem.cuh"
#include "flash_attention.hpp"
#include "loom_backend/packed_attention_contract.hpp"
#include "op_preamble.cuh"

namespace loom_cuda {
namespace {

/// A checked packed call: its shape (batch 1, seq N) and its sequences.
struct PackedCall {
  AttentionShape shape;
  loom_backend::PackedDims dims;
};

}  // namespace

PackedLaunch CudaBackend::packed_launch(const loom::Tensor& starts, const loom_backend::PackedDims& dims,
                                        int64_t window) {
  auto* first_elements = static_cast<uint64_t*>(scratch(static_cast<size_t>(dims.sequences) * sizeof(uint64_t)));
  return PackedLaunch{static_cast<const int32_t*>(starts.data), first_elements, dims.sequences,
                      dims.max_sequence, window};
}

void CudaBackend::packed_attention_forward(const loom::Tensor& q, const loom::Tensor& k, const loom::Tensor& v,
                                           const loom::Tensor& starts, const int32_t* starts_host,
                                           int64_t max_sequence, float scale, int64_t window, float p,
                                           uint64_t seed, uint64_t offset, const loom::Tensor& ctx,
                                           const loom::Tensor& lse) {
  run_op(
      "packed_attention_forward",
      [&](const ArgumentChecks& check) {
        const loom_backend::PackedDims dims = loom_backend::check_packed_attention_forward(
            check, q, k, v, starts, starts_host, max_sequence, p, ctx, lse);
        return PackedCall{attention_shape(check, dims.heads, scale, window, p, seed, offset), dims};
      },
      {q.dtype},
      [&](const PackedCall& call, auto tag) {
        using S = decltype(tag);
        if constexpr (!std::is_same_v<S, float>) {  // the Tensor-Core kernels take 16-bit views only
          if (tensor_core_attention_ && flash_attention_serves(call.shape, q, k, v, ctx)) {
            flash_packed_attention_forward<S>(q, k, v, packed_launch(starts, call.dims, window), call.shape, ctx,
                                              static_cast<float*>(lse.data), stream_);
            return;
          }
        }
        loom_backend::for_each_packed_sequence(call.dims, starts_host, [&](const loom_backend::PackedSequenceCall& c) {
          windowed_attention_forward(c.rows(q), c.rows(k), c.rows(v), loom::Tensor{}, scale, window, p, seed,
                                     offset + c.first_element, c.rows(ctx), c.statistics(lse));
        });
      });
}

void CudaBackend::packed_attention_backward(const loom::Tensor& d_ctx, const loom::Tensor& q,
                                            const loom::Tensor& k, const loom::Tensor& v, const loom::Tensor& ctx,
                                            const loom::Tensor& lse, const loom::Tensor& starts,
                                            const int32_t* starts_host, int64_t max_sequence, float scale,
                                            int64_t window, float p, uint64_t seed, uint64_t offset,
                                            const loom::Tensor& dq, const loom::Tensor& dk, const loom::Tensor& dv,
                                            const loom::Tensor& delta) {
  run_op(
      "packed_attention_backward",
      [&](const ArgumentChecks& check) {
        const loom_backend::PackedDims dims = loom_backend::check_packed_attention_backward(
            check, d_ctx, q, k, v, ctx, lse, starts, starts_host, max_sequence, p, dq, dk, dv, delta);
        return PackedCall{attention_shape(check, dims.heads, scale, window, p, seed, offset), dims};
      },
      {q.dtype},
      [&](const PackedCall& call, auto tag) {
        using S = decltype(tag);
        if constexpr (!std::is_same_v<S, float>) {
          if (tensor_core_attention_ && flash_attention_serves(call.shape, q, k, v, ctx, d_ctx)) {
            const PackedLaunch launch = packed_launch(starts, call.dims, window);
            const auto* lse_data = static_cast<const float*>(lse.data);
            auto* delta_data = static_cast<float*>(delta.data);
            // d_ctx is f32 or q's dtype (the contract), as in attention_backward.cu.
            if (d_ctx.dtype == DType::f32)
              flash_packed_attention_backward<S, float>(d_ctx, q, k, v, ctx, lse_data, delta_data, launch,
                                                        call.shape, dq, dk, dv, stream_);
            else
              flash_packed_attention_backward<S, S>(d_ctx, q, k, v, ctx, lse_data, delta_data, launch, call.shape,
                                                    dq, dk, dv, stream_);
            return;
          }
        }
        loom_backend::for_each_packed_sequence(call.dims, starts_host, [&](const loom_backend::PackedSequenceCall& c) {
          windowed_attention_backward(c.rows(d_ctx), c.rows(q), c.rows(k), c.rows(v), c.rows(ctx), c.statistics(lse),
                                      loom::Tensor{}, scale, window, p, seed, offset + c.first_element, c.rows(dq),
                                      c.rows(dk), c.rows(dv), c.statistics(delta));
        });
      });
}

}  // namespace loom_cuda
