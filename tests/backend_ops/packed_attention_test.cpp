// Packed attention and rotary positions (loom::PackedAttention, on backends that offer it): a
// batch's real tokens back to back, attention within each sequence. Against a float64 reference of
// the header's definition (each sequence's dropout elements and lse block after the previous
// sequence's) at windows −1, 0, 1, 3 and beyond, with dropout and an offset: the forward and its analytic gradients; the same
// sequences padded into [B, T] rows through WindowedAttention give the same values at every real
// position (what makes an unpadded step equal a padded one); rotation at given positions equals
// rotary_apply's at those columns; bad starts and positions are named.
#include <algorithm>
#include <sstream>
#include <tuple>

#include "attention_shapes.hpp"
#include "backend_op_case.hpp"
#include "loom/sdk/ops/packed_attention.hpp"
#include "loom/sdk/ops/rotary_embedding.hpp"
#include "loom/sdk/ops/windowed_attention.hpp"
#include "loom/sdk/philox.hpp"

namespace loom_backend_ops {
namespace {

using loom::DType;
using loom::Tensor;

LOOM_BACKEND_OP_FAMILY(PackedAttention);

/// Sequences of lengths 9, 1, 6 and 4 (N = 20): one of a single token, one as long as the padded row.
const std::vector<int64_t> kLengths{9, 1, 6, 4};

std::vector<int64_t> starts_of(const std::vector<int64_t>& lengths) {
  std::vector<int64_t> starts{0};
  for (const int64_t length : lengths) starts.push_back(starts.back() + length);
  return starts;
}

/// Attention in float64 over a packed [N, H, d] activation, as packed_attention.hpp defines it; lse
/// sequence after sequence, [H, L] each; with d_ctx the analytic gradients too.
struct Float64Packed {
  std::vector<double> ctx, lse, dq, dk, dv;
};
Float64Packed reference_packed(const std::vector<int64_t>& starts, int64_t H, int64_t d,
                               const std::vector<double>& q, const std::vector<double>& k,
                               const std::vector<double>& v, const std::vector<float>& d_ctx, double scale,
                               int64_t window, float p, uint64_t seed, uint64_t offset) {
  const int64_t N = starts.back();
  Float64Packed out;
  out.ctx.assign(q.size(), 0.0);
  out.dq = out.dk = out.dv = out.ctx;
  out.lse.assign(static_cast<size_t>(H * N), 0.0);
  const uint32_t threshold = loom::dropout_threshold(p);
  const auto at = [&](int64_t h, int64_t t) { return (t * H + h) * d; };
  uint64_t first_element = 0;  // H·Σ L² over the sequences before
  for (size_t s = 0; s + 1 < starts.size(); ++s) {
    const int64_t L = starts[s + 1] - starts[s];
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = starts[s]; i < starts[s + 1]; ++i) {
        std::vector<int64_t> keys;
        for (int64_t j = starts[s]; j < starts[s + 1]; ++j)
          if (window < 0 || std::abs(i - j) <= window) keys.push_back(j);
        std::vector<double> score, z;
        double max = -INFINITY, sum = 0, delta = 0;
        for (const int64_t j : keys) {
          double dot = 0;
          for (int64_t c = 0; c < d; ++c) dot += q[at(h, i) + c] * k[at(h, j) + c];
          score.push_back(scale * dot);
          max = std::max(max, score.back());
          const auto e =
              offset + first_element + static_cast<uint64_t>((h * L + i - starts[s]) * L + j - starts[s]);
          z.push_back(p == 0 ? 1.0 : (loom::philox_word(seed, e) >= threshold ? 1.0 / (1.0 - p) : 0.0));
        }
        for (const double x : score) sum += std::exp(x - max);
        out.lse[H * starts[s] + h * L + i - starts[s]] = max + std::log(sum);
        for (size_t m = 0; m < keys.size(); ++m)
          for (int64_t c = 0; c < d; ++c)
            out.ctx[at(h, i) + c] += std::exp(score[m] - max) / sum * z[m] * v[at(h, keys[m]) + c];
        for (int64_t c = 0; c < d; ++c) delta += d_ctx[at(h, i) + c] * out.ctx[at(h, i) + c];
        for (size_t m = 0; m < keys.size(); ++m) {
          const int64_t j = keys[m];
          const double prob = std::exp(score[m] - max) / sum;
          double dp = 0;
          for (int64_t c = 0; c < d; ++c) dp += d_ctx[at(h, i) + c] * v[at(h, j) + c];
          const double ds = prob * (dp * z[m] - delta);
          for (int64_t c = 0; c < d; ++c) {
            out.dq[at(h, i) + c] += scale * ds * k[at(h, j) + c];
            out.dk[at(h, j) + c] += scale * ds * q[at(h, i) + c];
            out.dv[at(h, j) + c] += prob * z[m] * d_ctx[at(h, i) + c];
          }
        }
      }
    first_element += static_cast<uint64_t>(H * L * L);
  }
  return out;
}

/// One forward and backward of the packed op on device copies of packed [N, H, d] inputs.
struct PackedRun {
  PackedRun(const BackendOpCase& test, loom::Backend& backend, const std::vector<int64_t>& starts, int64_t H,
            int64_t d, const std::vector<std::vector<float>>& inputs)
      : n{1, H, starts.back(), d},
        q(backend, HostTensor::of(inputs[0], DType::f32, n.activation())),
        k(backend, HostTensor::of(inputs[1], DType::f32, n.activation())),
        v(backend, HostTensor::of(inputs[2], DType::f32, n.activation())),
        d_ctx(backend, HostTensor::of(inputs[3], DType::f32, n.activation())),
        ctx(backend, HostTensor::zeros(DType::f32, n.activation())),
        dq(backend, HostTensor::zeros(DType::f32, n.activation())),
        dk(backend, HostTensor::zeros(DType::f32, n.activation())),
        dv(backend, HostTensor::zeros(DType::f32, n.activation())),
        lse(backend, HostTensor::zeros(DType::f32, {1, H, n.T})),
        delta(backend, HostTensor::zeros(DType::f32, {1, H, n.T})),
        sequence_starts(backend, HostTensor::ids(starts, DType::i32, {static_cast<int64_t>(starts.size())})),
        starts_host(starts.begin(), starts.end()),
        longest(0) {
    (void)test;
    for (size_t s = 0; s + 1 < starts.size(); ++s) longest = std::max(longest, starts[s + 1] - starts[s]);
  }
  void run(loom::PackedAttention& op, float scale, int64_t window, float p, uint64_t seed, uint64_t offset) {
    op.packed_attention_forward(heads(q.view()), heads(k.view()), heads(v.view()), sequence_starts.view(),
                                starts_host.data(), longest, scale, window, p, seed, offset, heads(ctx.view()),
                                lse.view());
    op.packed_attention_backward(heads(d_ctx.view()), heads(q.view()), heads(k.view()), heads(v.view()),
                                 heads(ctx.view()), lse.view(), sequence_starts.view(), starts_host.data(),
                                 longest, scale, window, p, seed, offset, heads(dq.view()), heads(dk.view()),
                                 heads(dv.view()), delta.view());
  }
  Shape n;
  DeviceTensor q, k, v, d_ctx, ctx, dq, dk, dv, lse, delta, sequence_starts;
  std::vector<int32_t> starts_host;
  int64_t longest;
};

std::vector<std::vector<float>> packed_inputs(int64_t numel, uint32_t seed) {
  return {random_floats(numel, seed, -2, 2), random_floats(numel, seed + 1, -2, 2),
          random_floats(numel, seed + 2), random_floats(numel, seed + 3)};
}

std::string window_name(int64_t window, float p) {
  std::ostringstream out;
  out << "window " << window << " p " << p;
  return out.str();
}

TEST_P(PackedAttention, MatchesTheFloat64ReferenceAtEveryWindow) {
  LOOM_OFFERED_OR_SKIP(loom::PackedAttention, op);
  const std::vector<int64_t> starts = starts_of(kLengths);
  const int64_t H = 2, d = 4, N = starts.back();
  const auto inputs = packed_inputs(N * H * d, 301);
  const auto q = to_double(inputs[0]), k = to_double(inputs[1]), v = to_double(inputs[2]);
  const float scale = 0.7f;
  const Tolerance output = for_this_backend(kF32AgainstFloat64,
                                            attention_output_across_implementations(DType::f32)),
                  gradient = for_this_backend(kGradientAgainstCentralDifferences,
                                              attention_gradient_across_implementations(DType::f32));
  for (const int64_t window : {int64_t{-1}, int64_t{0}, int64_t{1}, int64_t{3}, int64_t{30}})
    for (const float p : {0.0f, 0.3f}) {
      SCOPED_TRACE(window_name(window, p));
      PackedRun run(*this, backend(), starts, H, d, inputs);
      run.run(*op, scale, window, p, 777, 5000);
      const Float64Packed want =
          reference_packed(starts, H, d, q, k, v, inputs[3], scale, window, p, 777, 5000);
      expect_close(read(run.ctx), want.ctx, output, "ctx");
      expect_close(read(run.lse), want.lse, kF32AgainstFloat64, "lse");
      expect_close(read(run.dq), want.dq, gradient, "dq");
      expect_close(read(run.dk), want.dk, gradient, "dk");
      expect_close(read(run.dv), want.dv, gradient, "dv");
    }
}

// The same sequences as rows of a [4, 9] padded batch through WindowedAttention: every real
// position's ctx, lse and gradients agree (bit for bit where both run backend/cpu's code).
TEST_P(PackedAttention, EqualsThePaddedBatchAtEveryRealPosition) {
  LOOM_OFFERED_OR_SKIP(loom::PackedAttention, op);
  auto* const padded_op = offered<loom::WindowedAttention>();
  if (padded_op == nullptr) GTEST_SKIP() << backend_label() << " does not offer WindowedAttention";
  const std::vector<int64_t> starts = starts_of(kLengths);
  const Shape padded{static_cast<int64_t>(kLengths.size()), 2, 9, 8};
  const int64_t N = starts.back(), row = padded.H * padded.d;
  const auto inputs = packed_inputs(N * row, 311);
  // Padded copies: real rows from the packed inputs, the padding rows random (they must not matter).
  std::vector<std::vector<float>> padded_inputs;
  std::vector<float> mask(static_cast<size_t>(padded.B * padded.T), loom::kMaskedKey);
  for (size_t m = 0; m < inputs.size(); ++m) {
    std::vector<float> values = random_floats(padded.numel(), 400 + static_cast<uint32_t>(m));
    for (int64_t b = 0; b < padded.B; ++b)
      for (int64_t t = 0; t < kLengths[b]; ++t) {
        std::copy_n(inputs[m].begin() + (starts[b] + t) * row, row,
                    values.begin() + (b * padded.T + t) * row);
        mask[b * padded.T + t] = 0.0f;
      }
    padded_inputs.push_back(values);
  }
  // d_ctx at padding rows is 0, as in a model whose losses read no padding position.
  for (int64_t b = 0; b < padded.B; ++b)
    for (int64_t t = kLengths[b]; t < padded.T; ++t)
      std::fill_n(padded_inputs[3].begin() + (b * padded.T + t) * row, row, 0.0f);
  const auto upload_f32 = [&](const std::vector<float>& values, std::vector<int64_t> shape) {
    return upload(HostTensor::of(values, DType::f32, std::move(shape)));
  };
  const Tolerance same = for_this_backend(kExact, attention_gradient_across_implementations(DType::f32));
  for (const int64_t window : {int64_t{-1}, int64_t{1}, int64_t{3}}) {
    SCOPED_TRACE(window_name(window, 0.0f));
    PackedRun run(*this, backend(), starts, padded.H, padded.d, inputs);
    run.run(*op, 0.5f, window, 0.0f, 0, 0);
    DeviceTensor q = upload_f32(padded_inputs[0], padded.activation()),
                 k = upload_f32(padded_inputs[1], padded.activation()),
                 v = upload_f32(padded_inputs[2], padded.activation()),
                 d_ctx = upload_f32(padded_inputs[3], padded.activation()),
                 key_mask = upload_f32(mask, {padded.B, padded.T}),
                 ctx = upload_zeros(DType::f32, padded.activation()),
                 dq = upload_zeros(DType::f32, padded.activation()),
                 dk = upload_zeros(DType::f32, padded.activation()),
                 dv = upload_zeros(DType::f32, padded.activation()),
                 lse = upload_zeros(DType::f32, {padded.B, padded.H, padded.T}),
                 delta = upload_zeros(DType::f32, {padded.B, padded.H, padded.T});
    padded_op->windowed_attention_forward(heads(q.view()), heads(k.view()), heads(v.view()), key_mask.view(),
                                          0.5f, window, 0.0f, 0, 0, heads(ctx.view()), lse.view());
    padded_op->windowed_attention_backward(heads(d_ctx.view()), heads(q.view()), heads(k.view()),
                                           heads(v.view()), heads(ctx.view()), lse.view(), key_mask.view(),
                                           0.5f, window, 0.0f, 0, 0, heads(dq.view()), heads(dk.view()),
                                           heads(dv.view()), delta.view());
    for (const auto& [name, packed_out, padded_out] :
         {std::tuple{"ctx", &run.ctx, &ctx}, std::tuple{"dq", &run.dq, &dq}, std::tuple{"dk", &run.dk, &dk},
          std::tuple{"dv", &run.dv, &dv}}) {
      const std::vector<float> got = read(*packed_out), all = read(*padded_out);
      std::vector<float> want;
      for (int64_t b = 0; b < padded.B; ++b)
        want.insert(want.end(), all.begin() + b * padded.T * row,
                    all.begin() + (b * padded.T + kLengths[b]) * row);
      expect_close(got, want, same, name);
    }
    const std::vector<float> got_lse = read(run.lse), all_lse = read(lse);
    std::vector<float> want_lse;  // each sequence's [H, L] block in turn
    for (int64_t b = 0; b < padded.B; ++b)
      for (int64_t h = 0; h < padded.H; ++h)
        for (int64_t t = 0; t < kLengths[b]; ++t)
          want_lse.push_back(all_lse[(b * padded.H + h) * padded.T + t]);
    expect_close(got_lse, want_lse, same, "lse");
  }
}

TEST_P(PackedAttention, RotationAtGivenPositionsIsRotaryApplyAtThoseColumns) {
  LOOM_OFFERED_OR_SKIP(loom::PackedAttention, op);
  auto* const rotary = offered<loom::RotaryEmbedding>();
  if (rotary == nullptr) GTEST_SKIP() << backend_label() << " does not offer RotaryEmbedding";
  const std::vector<int64_t> starts = starts_of(kLengths);
  const Shape padded{static_cast<int64_t>(kLengths.size()), 2, 9, 8};
  const int64_t N = starts.back(), row = padded.H * padded.d;
  const std::vector<float> x_padded = random_floats(padded.numel(), 521, -2, 2);
  std::vector<float> x_packed;
  std::vector<int64_t> positions;
  for (int64_t b = 0; b < padded.B; ++b)
    for (int64_t t = 0; t < kLengths[b]; ++t) {
      x_packed.insert(x_packed.end(), x_padded.begin() + (b * padded.T + t) * row,
                      x_padded.begin() + (b * padded.T + t + 1) * row);
      positions.push_back(t);
    }
  const Shape packed{1, padded.H, N, padded.d};
  DeviceTensor xp = upload(HostTensor::of(x_padded, DType::f32, padded.activation())),
               yp = upload_zeros(DType::f32, padded.activation()),
               xk = upload(HostTensor::of(x_packed, DType::f32, packed.activation())),
               yk = upload_zeros(DType::f32, packed.activation()),
               at = upload(HostTensor::ids(positions, DType::i32, {N}));
  for (const bool inverse : {false, true}) {
    rotary->rotary_apply(heads(xp.view()), heads(yp.view()), 160000.0, inverse);
    op->packed_rotary_apply(heads(xk.view()), heads(yk.view()), at.view(), 160000.0, inverse);
    const std::vector<float> all = read(yp);
    std::vector<float> want;
    for (int64_t b = 0; b < padded.B; ++b)
      want.insert(want.end(), all.begin() + b * padded.T * row,
                  all.begin() + (b * padded.T + kLengths[b]) * row);
    expect_close(read(yk), want, kExact, inverse ? "inverse" : "forward");
  }
}

TEST_P(PackedAttention, BadStartsAndPositionsAreNamed) {
  LOOM_OFFERED_OR_SKIP(loom::PackedAttention, op);
  const Shape n{1, 2, 6, 4};
  DeviceTensor q = upload_zeros(DType::f32, n.activation()), ctx = upload_zeros(DType::f32, n.activation()),
               lse = upload_zeros(DType::f32, {1, n.H, n.T}),
               starts64 = upload(HostTensor::ids({0, 6}, DType::i64, {2})),
               one = upload(HostTensor::ids({0}, DType::i32, {1})),
               starts = upload(HostTensor::ids({0, 6}, DType::i32, {2})),
               short_positions = upload(HostTensor::ids({0, 1}, DType::i32, {2}));
  const Tensor h = heads(q.view());
  const int32_t whole[2] = {0, 6}, short_of_n[2] = {0, 5}, one_host[1] = {0};
  const auto forward = [&](const DeviceTensor& device_starts, const int32_t* host_starts, int64_t longest) {
    op->packed_attention_forward(h, h, h, device_starts.view(), host_starts, longest, 1.0f, -1, 0.0f, 0, 0,
                                 heads(ctx.view()), lse.view());
  };
  expect_error_naming([&] { forward(starts64, whole, 6); }, {"packed_attention_forward", "starts", "dtype"});
  expect_error_naming([&] { forward(one, one_host, 6); }, {"packed_attention_forward", "S ≥ 1"});
  expect_error_naming([&] { forward(starts, whole, 7); }, {"packed_attention_forward", "max_sequence 7"});
  expect_error_naming([&] { forward(starts, short_of_n, 5); }, {"packed_attention_forward", "from 0 to 5"});
  expect_error_naming([&] { forward(starts, nullptr, 6); }, {"packed_attention_forward", "starts_host"});
  expect_error_naming([&] { op->packed_rotary_apply(h, heads(ctx.view()), short_positions.view(), 10000.0, false); },
                      {"packed_rotary_apply", "positions"});
}

}  // namespace
}  // namespace loom_backend_ops
