// Every op except GEMM reduces in a fixed order: its results are bit-identical for 1, 2 and 3
// threads (cpu_backend.hpp), and dropout's mask is the same for any thread count. Shapes are large
// enough for every parallel path to run. (What each op computes: tests/backend_ops.)
#include "op_test_support.hpp"

namespace {

using namespace loom_cpu_test;

/// Runs the same op sequence on a backend with `threads` and returns every output, concatenated.
std::vector<float> run_ops(int threads) {
  loom_cpu::CpuBackend be(threads);
  const int64_t rows = 300, C = 130, V = 50;
  auto x = random_floats(rows * C, 201), dy = random_floats(rows * C, 202), gamma = random_floats(C, 203),
       beta = random_floats(C, 204);
  std::vector<float> y(rows * C), mean(rows), rstd(rows), dx(rows * C), dgamma(C), dbeta(C), dbias(C),
      dpos(10 * C);
  be.layernorm_forward(view(x, {rows, C}), view(gamma, {C}), view(beta, {C}), 1e-5f, view(y, {rows, C}),
                       view(mean, {rows}), view(rstd, {rows}));
  be.layernorm_backward(view(dy, {rows, C}), view(x, {rows, C}), view(gamma, {C}), view(mean, {rows}),
                        view(rstd, {rows}), view(dx, {rows, C}), view(dgamma, {C}), view(dbeta, {C}), false);
  be.bias_grad(view(dy, {rows, C}), view(dbias, {C}));
  be.bias_grad(view(dy, {rows, C}), view(dpos, {10, C}));
  std::vector<float> g(rows * C), dg(rows * C), dgb(C);
  be.bias_gelu_forward(view(x, {rows, C}), view(beta, {C}), view(g, {rows, C}), loom::Gelu::erf);
  be.bias_gelu_backward(view(dy, {rows, C}), view(x, {rows, C}), view(beta, {C}), view(dg, {rows, C}),
                        view(dgb, {C}), loom::Gelu::erf);
  std::vector<float> probs(rows * C), ds(rows * C);
  be.softmax_forward(view(x, {rows, C}), loom::Tensor{}, 0.3f, view(probs, {rows, C}));
  be.softmax_backward(view(dy, {rows, C}), view(probs, {rows, C}), 0.3f, view(ds, {rows, C}));
  std::vector<int32_t> ids(rows);
  for (int64_t i = 0; i < rows; ++i) ids[i] = static_cast<int32_t>((i * 7) % V);
  std::vector<float> dtable(V * C);
  be.embedding_scatter_add(view(dy, {rows, C}), view(ids, {rows}), view(dtable, {V, C}));
  std::vector<float> loss(1), dlogits(rows * C), norm(1);
  be.cross_entropy(view(x, {rows, C}), view(ids, {rows}), C, -100, 1.0f, view(loss, {1}),
                   view(dlogits, {rows, C}), loom::Tensor{}, loom::Tensor{});
  be.global_norm(view(dy, {rows * C}), view(norm, {1}));
  std::vector<float> all;
  for (const auto* part : {&y, &mean, &rstd, &dx, &dgamma, &dbeta, &dbias, &dpos, &g, &dg, &dgb, &probs, &ds,
                           &dtable, &loss, &dlogits, &norm})
    all.insert(all.end(), part->begin(), part->end());
  return all;
}

TEST(ThreadIndependence, EveryNonGemmOpIsBitIdenticalFor1To3Threads) {
  const auto one = run_ops(1);
  EXPECT_EQ(run_ops(2), one);
  EXPECT_EQ(run_ops(3), one);
}

TEST(ThreadIndependence, FusedAttentionIsTheSameForEveryThreadCount) {
  // [B, T, H, d] activations seen as per-head [B, H, T, d] views, with padding and dropout.
  const int64_t B = 3, H = 4, T = 33, d = 8, n = B * T * H * d;
  auto q = random_floats(n, 51, -2, 2), k = random_floats(n, 52, -2, 2), v = random_floats(n, 53),
       d_ctx = random_floats(n, 54);
  std::vector<float> mask(B * T, 0.0f);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = std::max<int64_t>(1, T - 2 * b); t < T; ++t) mask[b * T + t] = loom::kMaskedKey;
  const auto heads = [&](std::vector<float>& x) { return view(x, {B, T, H, d}).permute({0, 2, 1, 3}); };
  const auto run = [&](int threads) {
    loom_cpu::CpuBackend be(threads);
    std::vector<float> ctx(n), dq(n), dk(n), dv(n), lse(B * H * T), delta(B * H * T);
    be.attention_forward(heads(q), heads(k), heads(v), view(mask, {B, T}), 0.3f, 0.1f, 9, 0, heads(ctx),
                         view(lse, {B, H, T}));
    be.attention_backward(heads(d_ctx), heads(q), heads(k), heads(v), heads(ctx), view(lse, {B, H, T}),
                          view(mask, {B, T}), 0.3f, 0.1f, 9, 0, heads(dq), heads(dk), heads(dv),
                          view(delta, {B, H, T}));
    std::vector<float> all;
    for (const auto* part : {&ctx, &dq, &dk, &dv}) all.insert(all.end(), part->begin(), part->end());
    return all;
  };
  EXPECT_EQ(run(3), run(1));
}

TEST(ThreadIndependence, WindowedAttentionRotaryAndGatedGeluAreTheSameForEveryThreadCount) {
  // Rotary q and k in place, then windowed attention over them, with padding and dropout; rotary
  // on heads long and wide enough for its parallel paths (the factor table, the rows); and the
  // gated GELU of rows of 2·I.
  const int64_t B = 3, H = 4, T = 33, d = 8, n = B * T * H * d, rows = 300, I = 130;
  const auto q0 = random_floats(n, 61, -2, 2), k0 = random_floats(n, 62, -2, 2);
  auto v = random_floats(n, 63), d_ctx = random_floats(n, 64), x = random_floats(rows * 2 * I, 65, -3, 3),
       dy = random_floats(rows * I, 66);
  std::vector<float> mask(B * T, 0.0f);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = std::max<int64_t>(1, T - 5 * b); t < T; ++t) mask[b * T + t] = loom::kMaskedKey;
  const auto heads = [&](std::vector<float>& a) { return view(a, {B, T, H, d}).permute({0, 2, 1, 3}); };
  const auto run = [&](int threads) {
    loom_cpu::CpuBackend be(threads);
    std::vector<float> q = q0, k = k0, ctx(n), dq(n), dk(n), dv(n), lse(B * H * T), delta(B * H * T),
                       y(rows * I), dx(rows * 2 * I);
    be.rotary_apply(heads(q), heads(q), 10000.0, false);
    be.rotary_apply(heads(k), heads(k), 10000.0, false);
    be.windowed_attention_forward(heads(q), heads(k), heads(v), view(mask, {B, T}), 0.3f, 4, 0.1f, 9, 0,
                                  heads(ctx), view(lse, {B, H, T}));
    be.windowed_attention_backward(heads(d_ctx), heads(q), heads(k), heads(v), heads(ctx),
                                   view(lse, {B, H, T}), view(mask, {B, T}), 0.3f, 4, 0.1f, 9, 0, heads(dq),
                                   heads(dk), heads(dv), view(delta, {B, H, T}));
    std::vector<float> long_heads = random_floats(2 * 8 * 160 * 16, 67, -2, 2), rotated(long_heads.size());
    be.rotary_apply(view(long_heads, {2, 8, 160, 16}), view(rotated, {2, 8, 160, 16}), 500000.0, true);
    be.gated_gelu_forward(view(x, {rows, 2 * I}), view(y, {rows, I}), loom::Gelu::erf);
    be.gated_gelu_backward(view(dy, {rows, I}), view(x, {rows, 2 * I}), view(dx, {rows, 2 * I}),
                           loom::Gelu::tanh);
    std::vector<float> all;
    for (const auto* part : {&q, &k, &ctx, &lse, &dq, &dk, &dv, &rotated, &y, &dx})
      all.insert(all.end(), part->begin(), part->end());
    return all;
  };
  const auto one = run(1);
  EXPECT_EQ(run(2), one);
  EXPECT_EQ(run(3), one);
}

TEST(ThreadIndependence, SumSquaresIsTheSameForEveryThreadCount) {
  const int64_t n = 70001;  // several chunks
  auto x = random_floats(n, 101);
  const int64_t offsets[] = {0, 10, 10, 40000, n};
  std::vector<float> one_thread(4), two_threads(4);
  loom_cpu::CpuBackend(1).sum_squares(view(x, {n}), offsets, 4, view(one_thread, {4}));
  loom_cpu::CpuBackend(2).sum_squares(view(x, {n}), offsets, 4, view(two_threads, {4}));
  EXPECT_EQ(two_threads, one_thread);
}

TEST(ThreadIndependence, DropoutIsTheSameForEveryThreadCount) {
  const int64_t n = 3 * 4096 + 17;  // several chunks, a ragged tail
  auto x = random_floats(n, 71);
  std::vector<float> reference(n);
  loom_cpu::CpuBackend one(1);
  one.dropout_forward(view(x, {n}), view(reference, {n}), 0.3f, 99, 5);
  for (int threads : {2, 3, 5}) {
    loom_cpu::CpuBackend many(threads);
    std::vector<float> y(n);
    many.dropout_forward(view(x, {n}), view(y, {n}), 0.3f, 99, 5);
    EXPECT_EQ(y, reference) << threads << " threads";
  }
}

}  // namespace
