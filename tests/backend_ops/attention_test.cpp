// Fused attention (loom::FusedAttention, on backends that offer it) against the unfused composition
// the encoder layer runs otherwise — gemm, softmax with the key mask, dropout and their backwards
// on the reference, which define the same function with the same dropout bits — on per-head
// strided views of [B·T, H·d] activations, with padding masks, a batch whose keys are all masked,
// dropout, f32/bf16/f16 storage and T from 1 to 512; against the reference's own fused op; its
// gradients against central differences of a float64 reference; 16-bit storage against f32; a
// second backward repeating the first bit for bit; a wrong lse named. (backend/cuda's Tensor-Core
// kernels at production sizes, within bounds derived from their own rounding, are its own tests.)
#include <sstream>

#include "attention_shapes.hpp"
#include "backend_op_case.hpp"
#include "loom/sdk/ops/fused_attention.hpp"
#include "loom/sdk/philox.hpp"

namespace loom_backend_ops {
namespace {

using loom::DType;
using loom::Tensor;

LOOM_BACKEND_OP_FAMILY(Attention);

/// Attention's outputs in the activation layout [B, T, H, d] (lse [B, H, T]).
struct Results {
  std::vector<float> ctx, lse, dq, dk, dv;
};

/// The unfused composition on the reference, in f32 from the values of q, k, v (any storage).
Results unfused_on_reference(loom::Backend& reference, const Shape& n, const HostTensor& q,
                             const HostTensor& k, const HostTensor& v, const HostTensor* mask,
                             const HostTensor& d_ctx, float scale, float p, uint64_t seed, uint64_t offset) {
  const std::vector<int64_t> square = {n.B, n.H, n.T, n.T};
  HostTensor q32 = HostTensor::of(q.floats(), DType::f32, n.activation()),
             k32 = HostTensor::of(k.floats(), DType::f32, n.activation()),
             v32 = HostTensor::of(v.floats(), DType::f32, n.activation()), dc = d_ctx,
             scores = HostTensor::zeros(DType::f32, square), probs = scores, dropped = scores,
             d_dropped = scores, d_scores = scores, ctx = HostTensor::zeros(DType::f32, n.activation()),
             dq = ctx, dk = ctx, dv = ctx;
  HostTensor no_mask;
  const Tensor key_mask = mask != nullptr ? const_cast<HostTensor*>(mask)->view() : Tensor{};
  reference.gemm(heads(q32.view()), false, heads(k32.view()), true, scores.view(), 1, 0);
  reference.softmax_forward(scores.view(), key_mask, scale, probs.view());
  reference.dropout_forward(probs.view(), dropped.view(), p, seed, offset);
  reference.gemm(dropped.view(), false, heads(v32.view()), false, heads(ctx.view()), 1, 0);
  reference.gemm(heads(dc.view()), false, heads(v32.view()), true, d_dropped.view(), 1, 0);
  reference.gemm(dropped.view(), true, heads(dc.view()), false, heads(dv.view()), 1, 0);
  reference.dropout_backward(d_dropped.view(), d_dropped.view(), p, seed, offset);
  reference.softmax_backward(d_dropped.view(), probs.view(), scale, d_scores.view());
  reference.gemm(d_scores.view(), false, heads(k32.view()), false, heads(dq.view()), 1, 0);
  reference.gemm(d_scores.view(), true, heads(q32.view()), false, heads(dk.view()), 1, 0);
  // lse = log Σ_j exp(scale·s + mask) per row, in float64.
  std::vector<float> lse(static_cast<size_t>(n.B * n.H * n.T));
  for (int64_t row = 0; row < n.B * n.H * n.T; ++row) {
    const int64_t b = row / (n.H * n.T);
    const auto logit = [&](int64_t j) {
      return double(scale * scores.get(row * n.T + j) + (mask != nullptr ? mask->get(b * n.T + j) : 0.0f));
    };
    double max = -INFINITY, sum = 0;
    for (int64_t j = 0; j < n.T; ++j) max = std::max(max, logit(j));
    for (int64_t j = 0; j < n.T; ++j) sum += std::exp(logit(j) - max);
    lse[row] = static_cast<float>(max + std::log(sum));
  }
  return {ctx.floats(), lse, dq.floats(), dk.floats(), dv.floats()};
}

/// The fused op on `backend` (its memory) from the same host data; ctx in q's dtype, gradients f32.
struct FusedRun {
  FusedRun(loom::Backend& backend, const Shape& n, const HostTensor& q_host, const HostTensor& k_host,
           const HostTensor& v_host, const HostTensor* mask_host, const HostTensor& d_ctx_host)
      : q(backend, q_host),
        k(backend, k_host),
        v(backend, v_host),
        d_ctx(backend, d_ctx_host),
        mask(backend, mask_host != nullptr ? *mask_host : HostTensor::zeros(DType::f32, {1})),
        ctx(backend, HostTensor::zeros(q_host.dtype, n.activation())),
        lse(backend, HostTensor::zeros(DType::f32, {n.B, n.H, n.T})),
        dq(backend, HostTensor::zeros(DType::f32, n.activation())),
        dk(backend, HostTensor::zeros(DType::f32, n.activation())),
        dv(backend, HostTensor::zeros(DType::f32, n.activation())),
        delta(backend, HostTensor::zeros(DType::f32, {n.B, n.H, n.T})),
        masked(mask_host != nullptr) {}

  Tensor key_mask() const { return masked ? mask.view() : Tensor{}; }
  void forward(loom::FusedAttention& op, float scale, float p, uint64_t seed, uint64_t offset) {
    op.attention_forward(heads(q.view()), heads(k.view()), heads(v.view()), key_mask(), scale, p, seed,
                         offset, heads(ctx.view()), lse.view());
  }
  void backward(loom::FusedAttention& op, float scale, float p, uint64_t seed, uint64_t offset) {
    op.attention_backward(heads(d_ctx.view()), heads(q.view()), heads(k.view()), heads(v.view()),
                          heads(ctx.view()), lse.view(), key_mask(), scale, p, seed, offset, heads(dq.view()),
                          heads(dk.view()), heads(dv.view()), delta.view());
  }
  Results results() const { return {ctx.floats(), lse.floats(), dq.floats(), dk.floats(), dv.floats()}; }

  DeviceTensor q, k, v, d_ctx, mask, ctx, lse, dq, dk, dv, delta;
  bool masked;
};

struct Inputs {
  HostTensor q, k, v, d_ctx, mask;
};
Inputs random_inputs(const Shape& n, uint32_t seed, DType dtype = DType::f32) {
  return {HostTensor::of(random_floats(n.numel(), seed, -2, 2), dtype, n.activation()),
          HostTensor::of(random_floats(n.numel(), seed + 1, -2, 2), dtype, n.activation()),
          HostTensor::of(random_floats(n.numel(), seed + 2), dtype, n.activation()),
          HostTensor::of(random_floats(n.numel(), seed + 3), DType::f32, n.activation()), padding_mask(n)};
}

TEST_P(Attention, MatchesTheUnfusedOpsWithPaddingAndDropout) {
  LOOM_OFFERED_OR_SKIP(loom::FusedAttention, op);
  const Tolerance output_across = attention_output_across_implementations(DType::f32),
                  gradient_across = attention_gradient_across_implementations(DType::f32);
  const Tolerance ctx_bound = for_this_backend(kFusedAgainstUnfusedOutput, output_across),
                  dqk_bound = for_this_backend(kFusedAgainstUnfusedGradient, gradient_across),
                  dv_bound = for_this_backend(kFusedAgainstUnfusedOutput, gradient_across);
  for (const Shape n : {Shape{2, 3, 7, 8}, Shape{3, 2, 37, 64}, Shape{1, 1, 1, 5}})
    for (const float p : {0.0f, 0.1f, 0.5f}) {
      std::ostringstream what;
      what << n.name() << " p " << p;
      SCOPED_TRACE(what.str());
      const Inputs in = random_inputs(n, 11);
      const float scale = 1.0f / std::sqrt(static_cast<float>(n.d));
      const Results want =
          unfused_on_reference(reference(), n, in.q, in.k, in.v, &in.mask, in.d_ctx, scale, p, 1234, 0);
      FusedRun run(backend(), n, in.q, in.k, in.v, &in.mask, in.d_ctx);
      run.forward(*op, scale, p, 1234, 0);
      run.backward(*op, scale, p, 1234, 0);
      const Results got = run.results();
      expect_close(got.ctx, want.ctx, ctx_bound, "ctx");
      expect_close(got.dq, want.dq, dqk_bound, "dq");
      expect_close(got.dk, want.dk, dqk_bound, "dk");
      expect_close(got.dv, want.dv, dv_bound, "dv");
    }
}

TEST_P(Attention, FullyMaskedBatchRowIsUniformAsInTheUnfusedOps) {
  LOOM_OFFERED_OR_SKIP(loom::FusedAttention, op);
  const Shape n{2, 2, 6, 4};
  Inputs in = random_inputs(n, 31);
  for (int64_t t = 0; t < n.T; ++t) in.mask.set(n.T + t, loom::kMaskedKey);  // batch row 1: every key masked
  const Results want =
      unfused_on_reference(reference(), n, in.q, in.k, in.v, &in.mask, in.d_ctx, 0.5f, 0.0f, 0, 0);
  FusedRun run(backend(), n, in.q, in.k, in.v, &in.mask, in.d_ctx);
  run.forward(*op, 0.5f, 0.0f, 0, 0);
  run.backward(*op, 0.5f, 0.0f, 0, 0);
  const Results got = run.results();
  const Tolerance gradient = attention_gradient_across_implementations(DType::f32);
  expect_close(
      got.ctx, want.ctx,
      for_this_backend(kFusedAgainstUnfusedOutput, attention_output_across_implementations(DType::f32)),
      "ctx");
  expect_close(got.dq, want.dq, for_this_backend(kFusedAgainstUnfusedGradient, gradient), "dq");
  expect_close(got.dk, want.dk, for_this_backend(kFusedAgainstUnfusedGradient, gradient), "dk");
  expect_close(got.dv, want.dv, for_this_backend(kFusedAgainstUnfusedOutput, gradient), "dv");
}

/// ctx = dropout(softmax(scale·q·kᵀ + mask))·v in float64, the dropout bits from philox_word, over
/// [B, T, H, d] activations.
std::vector<double> reference_ctx(const Shape& n, const std::vector<double>& q, const std::vector<double>& k,
                                  const std::vector<double>& v, const std::vector<float>& mask, double scale,
                                  float p, uint64_t seed) {
  std::vector<double> ctx(q.size(), 0.0);
  const uint32_t threshold = loom::dropout_threshold(p);
  const auto at = [&](int64_t b, int64_t h, int64_t t) { return (b * n.T + t) * n.H * n.d + h * n.d; };
  for (int64_t b = 0; b < n.B; ++b)
    for (int64_t h = 0; h < n.H; ++h)
      for (int64_t i = 0; i < n.T; ++i) {
        std::vector<double> s(n.T);
        double max = -INFINITY, sum = 0;
        for (int64_t j = 0; j < n.T; ++j) {
          double dot = 0;
          for (int64_t c = 0; c < n.d; ++c) dot += q[at(b, h, i) + c] * k[at(b, h, j) + c];
          s[j] = scale * dot + mask[b * n.T + j];
          max = std::max(max, s[j]);
        }
        for (int64_t j = 0; j < n.T; ++j) sum += std::exp(s[j] - max);
        for (int64_t j = 0; j < n.T; ++j) {
          const auto e = static_cast<uint64_t>(((b * n.H + h) * n.T + i) * n.T + j);
          const double z = p == 0 ? 1.0 : (loom::philox_word(seed, e) >= threshold ? 1.0 / (1.0 - p) : 0.0);
          for (int64_t c = 0; c < n.d; ++c)
            ctx[at(b, h, i) + c] += std::exp(s[j] - max) / sum * z * v[at(b, h, j) + c];
        }
      }
  return ctx;
}

TEST_P(Attention, GradientsMatchCentralDifferencesOfTheFloat64Reference) {
  LOOM_OFFERED_OR_SKIP(loom::FusedAttention, op);
  const Shape n{2, 2, 5, 3};
  const float p = 0.3f, scale = 0.6f;
  const Inputs in = random_inputs(n, 21);
  FusedRun run(backend(), n, in.q, in.k, in.v, &in.mask, in.d_ctx);
  run.forward(*op, scale, p, 77, 0);
  run.backward(*op, scale, p, 77, 0);
  const Results got = run.results();
  const auto q = to_double(in.q.floats()), k = to_double(in.k.floats()), v = to_double(in.v.floats());
  const std::vector<float> mask = in.mask.floats(), w = in.d_ctx.floats();
  expect_close(got.ctx, reference_ctx(n, q, k, v, mask, scale, p, 77),
               for_this_backend(kF32AgainstFloat64, attention_output_across_implementations(DType::f32)),
               "ctx");
  const Tolerance gradient = for_this_backend(kGradientAgainstCentralDifferences,
                                              attention_gradient_across_implementations(DType::f32));
  expect_close(
      got.dq,
      numeric_gradient(
          [&](const auto& x) { return weighted_sum(reference_ctx(n, x, k, v, mask, scale, p, 77), w); }, q),
      gradient, "dq");
  expect_close(
      got.dk,
      numeric_gradient(
          [&](const auto& x) { return weighted_sum(reference_ctx(n, q, x, v, mask, scale, p, 77), w); }, k),
      gradient, "dk");
  expect_close(
      got.dv,
      numeric_gradient(
          [&](const auto& x) { return weighted_sum(reference_ctx(n, q, k, x, mask, scale, p, 77), w); }, v),
      gradient, "dv");
}

TEST_P(Attention, Bf16StorageWithoutAMaskAgainstF32) {
  LOOM_OFFERED_OR_SKIP(loom::FusedAttention, op);
  const Shape n{2, 2, 19, 16};
  const Inputs in = random_inputs(n, 41, DType::bf16);  // bf16 values: both runs see the same ones
  const auto as_f32 = [&](const HostTensor& t) {
    return HostTensor::of(t.floats(), DType::f32, n.activation());
  };
  FusedRun f32(backend(), n, as_f32(in.q), as_f32(in.k), as_f32(in.v), nullptr, in.d_ctx);
  FusedRun bf16(backend(), n, in.q, in.k, in.v, nullptr, in.d_ctx);
  for (FusedRun* run : {&f32, &bf16}) {
    run->forward(*op, 0.25f, 0.2f, 5, 0);
    run->backward(*op, 0.25f, 0.2f, 5, 0);
  }
  const Results want = f32.results(), got = bf16.results();
  // The runs differ by the rounding of ctx to bf16, which δ = Σ d_ctx·ctx carries into dq and dk.
  expect_close(got.ctx, want.ctx, for_this_backend(kBf16ContextAgainstF32, DType::bf16), "bf16 ctx");
  expect_close(got.dq, want.dq, for_this_backend(kThroughBf16Context, DType::f32), "bf16 dq");
  expect_close(got.dk, want.dk, for_this_backend(kThroughBf16Context, DType::f32), "bf16 dk");
  expect_close(got.dv, want.dv, for_this_backend(kFusedAgainstUnfusedOutput, DType::f32),
               "bf16 dv (independent of ctx)");
}

TEST_P(Attention, AWrongLseShapeIsNamed) {
  LOOM_OFFERED_OR_SKIP(loom::FusedAttention, op);
  const Shape n{1, 2, 4, 8};
  const Inputs in = random_inputs(n, 61);
  DeviceTensor q = upload(in.q), k = upload(in.k), v = upload(in.v),
               ctx = upload_zeros(DType::f32, n.activation()),
               lse = upload_zeros(DType::f32, {n.B, n.H, n.T + 1});
  expect_error_naming(
      [&] {
        op->attention_forward(heads(q.view()), heads(k.view()), heads(v.view()), Tensor{}, 1.0f, 0.0f, 0, 0,
                              heads(ctx.view()), lse.view());
      },
      {"attention_forward: lse"});
}

struct StorageCase {
  int64_t seq;
  DType dtype;
  float p;
  bool mask_all_of_batch1;
};

TEST_P(Attention, EveryStorageAndLengthAsTheReferenceAndRepeatable) {
  LOOM_OFFERED_OR_SKIP(loom::FusedAttention, op);
  loom::FusedAttention* const reference_op = reference_offers<loom::FusedAttention>();
  ASSERT_NE(reference_op, nullptr);
  for (const StorageCase& cs :
       {StorageCase{1, DType::f32, 0.0f, false}, StorageCase{37, DType::f32, 0.0f, true},
        StorageCase{37, DType::f32, 0.1f, false}, StorageCase{128, DType::f32, 0.1f, false},
        StorageCase{512, DType::f32, 0.1f, false}, StorageCase{128, DType::bf16, 0.1f, false},
        StorageCase{37, DType::f16, 0.0f, true}, StorageCase{512, DType::bf16, 0.0f, false}}) {
    const Shape n{2, 2, cs.seq, 64};
    std::ostringstream what;
    what << "T=" << n.T << " " << loom::dtype_name(cs.dtype) << " p=" << cs.p;
    SCOPED_TRACE(what.str());
    const float scale = 1.0f / std::sqrt(static_cast<float>(n.d));
    const uint64_t seed = 0xfeedbeefull, offset = 12345;
    Inputs in = random_inputs(n, 1, cs.dtype);
    std::vector<float> mask(n.B * n.T, 0.0f);
    for (int64_t t = 0; t < n.T; ++t) {
      if (n.T > 1 && t >= (2 * n.T + 2) / 3) mask[t] = loom::kMaskedKey;  // batch 0: padding at the end
      if (cs.mask_all_of_batch1) mask[n.T + t] = loom::kMaskedKey;
    }
    in.mask = HostTensor::of(mask, DType::f32, {n.B, n.T});
    in.d_ctx = HostTensor::of(random_floats(n.numel(), 4), DType::f32, n.activation());

    const Results want =
        unfused_on_reference(reference(), n, in.q, in.k, in.v, &in.mask, in.d_ctx, scale, cs.p, seed, offset);
    FusedRun run(backend(), n, in.q, in.k, in.v, &in.mask, in.d_ctx);
    run.forward(*op, scale, cs.p, seed, offset);
    run.backward(*op, scale, cs.p, seed, offset);
    const Results got = run.results();
    // With 16-bit storage ctx is rounded before δ = Σ d_ctx·ctx, so the gradients carry that rounding.
    const Tolerance ctx_bound = attention_output_across_implementations(cs.dtype),
                    gradient_bound = attention_gradient_across_implementations(cs.dtype);
    expect_close(got.ctx, want.ctx, ctx_bound, "ctx");
    expect_close(got.lse, want.lse, kLogSumExpAcrossImplementations, "lse");
    expect_close(got.dq, want.dq, gradient_bound, "dq");
    expect_close(got.dk, want.dk, gradient_bound, "dk");
    expect_close(got.dv, want.dv, gradient_bound, "dv");

    // The reference's own fused op (f32 from the same values) agrees as well.
    const auto as_f32 = [&](const HostTensor& t) {
      return HostTensor::of(t.floats(), DType::f32, n.activation());
    };
    HostTensor q32 = as_f32(in.q), k32 = as_f32(in.k), v32 = as_f32(in.v), d_ctx = in.d_ctx,
               ctx_ref = HostTensor::zeros(DType::f32, n.activation()),
               lse_ref = HostTensor::zeros(DType::f32, {n.B, n.H, n.T}), dq_ref = ctx_ref, dk_ref = ctx_ref,
               dv_ref = ctx_ref, delta_ref = lse_ref;
    reference_op->attention_forward(heads(q32.view()), heads(k32.view()), heads(v32.view()), in.mask.view(),
                                    scale, cs.p, seed, offset, heads(ctx_ref.view()), lse_ref.view());
    reference_op->attention_backward(heads(d_ctx.view()), heads(q32.view()), heads(k32.view()),
                                     heads(v32.view()), heads(ctx_ref.view()), lse_ref.view(), in.mask.view(),
                                     scale, cs.p, seed, offset, heads(dq_ref.view()), heads(dk_ref.view()),
                                     heads(dv_ref.view()), delta_ref.view());
    expect_close(got.ctx, ctx_ref.floats(), ctx_bound, "ctx against the reference's fused op");
    expect_close(got.dq, dq_ref.floats(), gradient_bound, "dq against the reference's fused op");

    // Deterministic: a second backward gives the same bits.
    run.backward(*op, scale, cs.p, seed, offset);
    expect_equal(run.dk.floats(), got.dk, "dk of a second backward");
  }
}

}  // namespace
}  // namespace loom_backend_ops
