// The one-launch packed attention kernels (flash_packed.cuh) run on the CPU lane by lane
// (lane_emulator): every block of the grid (⌈max L / 64⌉, S·H), those past their sequence's end
// included, over the packed [N, H, d] activations. Checked two ways:
//   - bit for bit against the same kernel bodies launched once per sequence, as the per-sequence
//     path runs them (its rows, its block of lse and delta, its first dropout element, its window);
//     every output element written (NaN before);
//   - against backend/cpu's packed_attention_forward/backward within the derived per-element bounds
//     of attention_error_bounds.hpp, applied to each sequence.
// And each sequence's first dropout element as first_dropout_element makes it on the device against
// loom_backend::for_each_packed_sequence's.
//
// Cases: sequences of 1 token, of exactly one tile (64), across tiles (77, 130) and below one (37),
// in orders that put the longest first and last; windows none, 16 (bands inside a tile), and 100
// (every key for the shorter sequences, a band for the 130-token one); dropout on and off; bf16 and
// f16; d = 64 and 128; f32 and 16-bit incoming gradients.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "attention_error_bounds.hpp"
#include "backend_ops/references.hpp"
#include "cpu_backend.hpp"
#include "emulated_grid.hpp"
#include "flash_packed.cuh"
#include "loom/sdk/backend.hpp"
#include "loom/sdk/philox.hpp"
#include "loom_backend/attention_contract.hpp"
#include "loom_backend/packed_attention_contract.hpp"

namespace loom_cuda::flash {
namespace {

using emulation::rounded;
using emulation::run_grid;
using emulation::widened;
using loom::DType;
using loom_backend_ops::random_floats;

struct Case {
  std::vector<int32_t> lengths;
  int head_dim;
  DType dtype;
  float p;
  int64_t window;
  bool f32_gradient;
};

void PrintTo(const Case& c, std::ostream* out) {
  *out << "lengths";
  for (const int32_t l : c.lengths) *out << " " << l;
  *out << " d=" << c.head_dim << " " << loom::dtype_name(c.dtype) << " p=" << c.p << " window=" << c.window
       << (c.f32_gradient ? " f32 d_ctx" : " 16-bit d_ctx");
}

class PackedAttentionEmulated : public ::testing::TestWithParam<Case> {};

/// Bit-for-bit equality of two outputs, and every element written.
template <typename T>
void expect_same_bits(const std::vector<T>& packed, const std::vector<T>& per_sequence, const std::string& what) {
  ASSERT_EQ(packed.size(), per_sequence.size());
  size_t differ = 0, first = 0;
  for (size_t i = 0; i < packed.size(); ++i)
    if (std::memcmp(&packed[i], &per_sequence[i], sizeof(T)) != 0 && differ++ == 0) first = i;
  EXPECT_EQ(differ, 0u) << what << ": " << differ << " elements differ from the per-sequence launches, the first at "
                        << first;
  if constexpr (std::is_same_v<T, float>) {
    const auto unwritten = std::count_if(packed.begin(), packed.end(), [](float x) { return std::isnan(x); });
    EXPECT_EQ(unwritten, 0) << what << ": elements the packed launch did not write";
  }
}

/// G: the incoming gradient's storage (f32, or S).
template <typename S, typename G, int kD>
void check(const Case& cs) {
  const int64_t H = 2, d = kD, S_count = static_cast<int64_t>(cs.lengths.size());
  std::vector<int32_t> starts{0};
  for (const int32_t l : cs.lengths) starts.push_back(starts.back() + l);
  const int64_t N = starts.back(), longest = *std::max_element(cs.lengths.begin(), cs.lengths.end());
  const float scale = 1.0f / std::sqrt(static_cast<float>(d));
  const uint64_t seed = 0xfaceull, offset = 4242;

  // [N, H, d] activations (the packed [N, H·d]); the kernels see [1, H, N, d] views.
  const size_t n = static_cast<size_t>(N * H * d), statistics = static_cast<size_t>(H * N);
  const std::vector<S> q = rounded<S>(random_floats(n, 11, -2.0f, 2.0f)),
                       k = rounded<S>(random_floats(n, 12, -2.0f, 2.0f)),
                       v = rounded<S>(random_floats(n, 13, -1.0f, 1.0f));
  const std::vector<float> g32 = random_floats(n, 14, -1.0f, 1.0f);
  std::vector<G> g(n);
  if constexpr (std::is_same_v<G, float>)
    g = g32;
  else
    g = rounded<S>(g32);
  const auto rows_of = [&](auto* data) {
    using T_ = std::remove_pointer_t<decltype(data)>;
    return HeadRows<T_>{data, N * H * d, d, H * d};
  };
  const AttentionShape call_shape{1,
                                  H,
                                  N,
                                  d,
                                  scale,
                                  cs.p > 0.0f,
                                  loom::dropout_threshold(cs.p),
                                  1.0f / (1.0f - cs.p),
                                  seed,
                                  offset,
                                  loom_backend::effective_window(cs.window, N)};

  // The sequences as the contract walks them; the device's first dropout elements against its.
  const loom_backend::PackedDims dims{{1, H, N, d}, S_count, longest};
  std::vector<PackedSequence> sequences;
  loom_backend::for_each_packed_sequence(dims, starts.data(), [&](const loom_backend::PackedSequenceCall& c) {
    sequences.push_back(PackedSequence{c.start, c.length, c.first_element});
  });
  std::vector<uint64_t> first_elements;
  for (int64_t s = 0; s < S_count; ++s) {
    first_elements.push_back(first_dropout_element(starts.data(), s, H));
    ASSERT_EQ(first_elements.back(), sequences[static_cast<size_t>(s)].first_element) << "sequence " << s;
  }
  const PackedSequences packed{starts.data(), cs.p > 0.0f ? first_elements.data() : nullptr, S_count, H, cs.window};

  struct Outputs {
    std::vector<S> ctx;
    std::vector<float> lse, delta, dq, dk, dv;
  };
  const auto fresh = [&] {
    return Outputs{std::vector<S>(n), std::vector<float>(statistics, NAN), std::vector<float>(statistics, NAN),
                   std::vector<float>(n, NAN),  std::vector<float>(n, NAN),         std::vector<float>(n, NAN)};
  };
  // The arguments of a call over rows [first, first + count) of the views with statistics from
  // H·first on: the whole packed call, or one sequence as the per-sequence path makes it (narrowed
  // views, the contract's window for its length, the offset at its first element).
  const auto forward_args = [&](Outputs& o, int64_t first, const AttentionShape& shape) {
    const int64_t row0 = first * H * d;
    return ForwardArgs<S>{rows_of(q.data() + row0), rows_of(k.data() + row0), rows_of(v.data() + row0),
                          rows_of(o.ctx.data() + row0), o.lse.data() + H * first, nullptr, nullptr, shape};
  };
  const auto delta_args = [&](Outputs& o, int64_t first, const AttentionShape& shape) {
    const int64_t row0 = first * H * d;
    return DeltaArgs<S, G>{rows_of(static_cast<const G*>(g.data() + row0)),
                           rows_of(static_cast<const S*>(o.ctx.data() + row0)), o.delta.data() + H * first, shape};
  };
  const auto backward_args = [&](Outputs& o, int64_t first, const AttentionShape& shape) {
    const int64_t row0 = first * H * d;
    return BackwardArgs<S, G>{rows_of(q.data() + row0),  rows_of(k.data() + row0),
                              rows_of(v.data() + row0),  rows_of(static_cast<const G*>(g.data() + row0)),
                              o.lse.data() + H * first,  o.delta.data() + H * first,
                              nullptr,                   nullptr,
                              rows_of(o.dq.data() + row0), rows_of(o.dk.data() + row0),
                              rows_of(o.dv.data() + row0), shape};
  };
  const auto sequence_shape = [&](const PackedSequence& seq) {
    AttentionShape shape = call_shape;
    shape.seq = seq.length;
    shape.window = loom_backend::effective_window(cs.window, seq.length);
    shape.offset = offset + seq.first_element;
    return shape;
  };

  // Once per sequence, each kernel in turn.
  Outputs per_sequence = fresh();
  for (const PackedSequence& seq : sequences)
    run_grid<Forward<S, kD>>(forward_args(per_sequence, seq.start, sequence_shape(seq)), (seq.length + 63) / 64, H);
  for (const PackedSequence& seq : sequences) {
    const int64_t blocks = (seq.length + 63) / 64;
    run_grid<RowDeltas<S, G, kD>>(delta_args(per_sequence, seq.start, sequence_shape(seq)), blocks, H);
    run_grid<KeyGrads<S, G, kD>>(backward_args(per_sequence, seq.start, sequence_shape(seq)), blocks, H);
    run_grid<QueryGrads<S, G, kD>>(backward_args(per_sequence, seq.start, sequence_shape(seq)), blocks, H);
  }
  // One launch of each over every sequence.
  Outputs one_launch = fresh();
  const int64_t tiles = (longest + 63) / 64, blocks_y = S_count * H;
  run_grid<Packed<Forward<S, kD>>>(PackedArgs<ForwardArgs<S>>{forward_args(one_launch, 0, call_shape), packed}, tiles,
                                   blocks_y);
  run_grid<Packed<RowDeltas<S, G, kD>>>(PackedArgs<DeltaArgs<S, G>>{delta_args(one_launch, 0, call_shape), packed},
                                        tiles, blocks_y);
  const PackedArgs<BackwardArgs<S, G>> backward{backward_args(one_launch, 0, call_shape), packed};
  run_grid<Packed<KeyGrads<S, G, kD>>>(backward, tiles, blocks_y);
  run_grid<Packed<QueryGrads<S, G, kD>>>(backward, tiles, blocks_y);

  expect_same_bits(widened(one_launch.ctx), widened(per_sequence.ctx), "ctx");
  expect_same_bits(one_launch.lse, per_sequence.lse, "lse");
  expect_same_bits(one_launch.delta, per_sequence.delta, "delta");
  expect_same_bits(one_launch.dq, per_sequence.dq, "dq");
  expect_same_bits(one_launch.dk, per_sequence.dk, "dk");
  expect_same_bits(one_launch.dv, per_sequence.dv, "dv");

  // backend/cpu's packed attention on the same 16-bit inputs, the backward reading the kernels' ctx.
  loom_cpu::CpuBackend cpu(1, true);
  const DType storage = cs.dtype;
  const auto heads = [&](const void* data, DType dtype) {
    return loom::Tensor::contiguous(const_cast<void*>(data), dtype, {1, N, H, d}).permute({0, 2, 1, 3});
  };
  const auto stats = [&](std::vector<float>& t) { return loom::Tensor::contiguous(t.data(), DType::f32, {1, H, N}); };
  const loom::Tensor starts_t = loom::Tensor::contiguous(starts.data(), DType::i32, {S_count + 1});
  std::vector<S> ctx_ref(n);
  std::vector<float> lse_ref(statistics), delta_ref(statistics), dq_ref(n), dk_ref(n), dv_ref(n);
  cpu.packed_attention_forward(heads(q.data(), storage), heads(k.data(), storage), heads(v.data(), storage), starts_t,
                               starts.data(), longest, scale, cs.window, cs.p, seed, offset,
                               heads(ctx_ref.data(), storage), stats(lse_ref));
  cpu.packed_attention_backward(heads(g.data(), std::is_same_v<G, float> ? DType::f32 : storage),
                                heads(q.data(), storage), heads(k.data(), storage), heads(v.data(), storage),
                                heads(one_launch.ctx.data(), storage), stats(one_launch.lse), starts_t, starts.data(),
                                longest, scale, cs.window, cs.p, seed, offset, heads(dq_ref.data(), DType::f32),
                                heads(dk_ref.data(), DType::f32), heads(dv_ref.data(), DType::f32), stats(delta_ref));

  // The bounds of each sequence as a call of its own, laid out as the packed outputs.
  const std::vector<float> qf = widened(q), kf = widened(k), vf = widened(v), ctxf = widened(one_launch.ctx);
  std::vector<float> gf(n);
  if constexpr (std::is_same_v<G, float>)
    gf = g;
  else
    gf = widened(g);
  flash_test::AttentionBounds bound{std::vector<double>(n), std::vector<double>(statistics), std::vector<double>(n),
                                    std::vector<double>(n), std::vector<double>(n)};
  const std::vector<float> no_mask(static_cast<size_t>(longest), 0.0f);
  for (const PackedSequence& seq : sequences) {
    const auto row0 = static_cast<std::ptrdiff_t>(seq.start * H * d), stat0 = static_cast<std::ptrdiff_t>(H * seq.start);
    const flash_test::AttentionBounds b = flash_test::attention_error_bounds(
        {1, H, seq.length, d, scale, cs.p, seed, offset + seq.first_element, qf.data() + row0, kf.data() + row0,
         vf.data() + row0, gf.data() + row0, ctxf.data() + row0, no_mask.data(),
         std::is_same_v<S, loom::BFloat16> ? 0x1p-8 : 0x1p-11, std::is_same_v<G, float>,
         loom_backend::effective_window(cs.window, seq.length)});
    std::copy(b.ctx.begin(), b.ctx.end(), bound.ctx.begin() + row0);
    std::copy(b.dq.begin(), b.dq.end(), bound.dq.begin() + row0);
    std::copy(b.dk.begin(), b.dk.end(), bound.dk.begin() + row0);
    std::copy(b.dv.begin(), b.dv.end(), bound.dv.begin() + row0);
    std::copy(b.lse.begin(), b.lse.end(), bound.lse.begin() + stat0);
  }
  flash_test::expect_within(ctxf, widened(ctx_ref), bound.ctx, "ctx");
  flash_test::expect_within(one_launch.lse, lse_ref, bound.lse, "lse");
  flash_test::expect_within(one_launch.dv, dv_ref, bound.dv, "dv");
  flash_test::expect_within(one_launch.dk, dk_ref, bound.dk, "dk");
  flash_test::expect_within(one_launch.dq, dq_ref, bound.dq, "dq");
}

template <typename S, int kD>
void check_storage(const Case& cs) {
  cs.f32_gradient ? check<S, float, kD>(cs) : check<S, S, kD>(cs);
}

TEST_P(PackedAttentionEmulated, OneLaunchEqualsPerSequenceLaunchesAndMatchesBackendCpu) {
  const Case cs = GetParam();
  if (cs.dtype == DType::bf16)
    cs.head_dim == 64 ? check_storage<loom::BFloat16, 64>(cs) : check_storage<loom::BFloat16, 128>(cs);
  else
    cs.head_dim == 64 ? check_storage<loom::Half, 64>(cs) : check_storage<loom::Half, 128>(cs);
}

INSTANTIATE_TEST_SUITE_P(
    Sequences, PackedAttentionEmulated,
    ::testing::Values(Case{{77, 1, 130, 64, 37}, 64, DType::bf16, 0.0f, -1, true},
                      Case{{130, 37, 1, 77, 64}, 64, DType::bf16, 0.1f, -1, false},
                      Case{{64, 130, 1}, 64, DType::f16, 0.1f, 16, true},
                      Case{{37, 130, 77, 1}, 64, DType::bf16, 0.1f, 100, true},
                      Case{{77, 1, 130}, 128, DType::f16, 0.1f, -1, true},
                      Case{{1, 64, 130}, 128, DType::bf16, 0.0f, 16, false}));

}  // namespace
}  // namespace loom_cuda::flash
