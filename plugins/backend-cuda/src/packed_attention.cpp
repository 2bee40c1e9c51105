// PackedAttention (loom/sdk/ops/packed_attention.hpp) on the GPU: each sequence of a packed batch
// is WindowedAttention over a batch of one row of its length without a key mask (the header's
// definition, loom_backend::for_each_packed_sequence), so it runs through this backend's own
// windowed attention — the Tensor-Core flash kernels for 16-bit heads of 64 or 128, the CUDA-core
// kernels otherwise — on the sequence's rows of the head views, its block of lse and delta and its
// first dropout element. Every kernel it launches is one the fused-attention tests already check,
// lane by lane on the CPU and on the GPU; what this file adds is which rows each call sees.
//
// One launch set per sequence: for a batch of S sequences, S times the launches of one padded call,
// each over a grid sized for its own length. The sequences' starts come from the host copy the
// SDK hands over, so nothing waits for the GPU.
#include "cuda_backend.hpp"
#include "loom_backend/packed_attention_contract.hpp"

namespace loom_cuda {

void CudaBackend::packed_attention_forward(const loom::Tensor& q, const loom::Tensor& k, const loom::Tensor& v,
                                           const loom::Tensor& starts, const int32_t* starts_host,
                                           int64_t max_sequence, float scale, int64_t window, float p,
                                           uint64_t seed, uint64_t offset, const loom::Tensor& ctx,
                                           const loom::Tensor& lse) {
  const loom_backend::ArgumentChecks check("packed_attention_forward", device());
  const loom_backend::PackedDims packed = loom_backend::check_packed_attention_forward(
      check, q, k, v, starts, starts_host, max_sequence, p, ctx, lse);
  loom_backend::for_each_packed_sequence(packed, starts_host, [&](const loom_backend::PackedSequenceCall& c) {
    windowed_attention_forward(c.rows(q), c.rows(k), c.rows(v), loom::Tensor{}, scale, window, p, seed,
                               offset + c.first_element, c.rows(ctx), c.statistics(lse));
  });
}

void CudaBackend::packed_attention_backward(const loom::Tensor& d_ctx, const loom::Tensor& q,
                                            const loom::Tensor& k, const loom::Tensor& v, const loom::Tensor& ctx,
                                            const loom::Tensor& lse, const loom::Tensor& starts,
                                            const int32_t* starts_host, int64_t max_sequence, float scale,
                                            int64_t window, float p, uint64_t seed, uint64_t offset,
                                            const loom::Tensor& dq, const loom::Tensor& dk, const loom::Tensor& dv,
                                            const loom::Tensor& delta) {
  const loom_backend::ArgumentChecks check("packed_attention_backward", device());
  const loom_backend::PackedDims packed = loom_backend::check_packed_attention_backward(
      check, d_ctx, q, k, v, ctx, lse, starts, starts_host, max_sequence, p, dq, dk, dv, delta);
  loom_backend::for_each_packed_sequence(packed, starts_host, [&](const loom_backend::PackedSequenceCall& c) {
    windowed_attention_backward(c.rows(d_ctx), c.rows(q), c.rows(k), c.rows(v), c.rows(ctx), c.statistics(lse),
                                loom::Tensor{}, scale, window, p, seed, offset + c.first_element, c.rows(dq),
                                c.rows(dk), c.rows(dv), c.statistics(delta));
  });
}

}  // namespace loom_cuda
