// ResidualLayerNorm against the separate ops it replaces (bias_add, dropout_forward, add,
// layernorm_forward, cast; layernorm_backward, dropout_backward, bias_grad): equal bit for bit,
// at odd sizes, with and without bias and dropout, over rows enough for the parallel path; and
// bad arguments named.
#include <cstring>

#include "op_test_support.hpp"

namespace {

using namespace loom_cpu_test;

struct Case {
  int64_t rows, cols;
  float p;
  bool bias;
  loom::DType compute;  // f32: no out_compute
};

template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

void check_against_separate_ops(const Case& k) {
  SCOPED_TRACE("rows " + std::to_string(k.rows) + " cols " + std::to_string(k.cols) + " p " +
               std::to_string(k.p) + (k.bias ? " bias" : " no bias") + " " + loom::dtype_name(k.compute));
  const int64_t R = k.rows, C = k.cols, n = R * C;
  const uint64_t seed = 0x5EEDull + static_cast<uint64_t>(C), offset = 1ull << 40;
  const float eps = 1e-12f;
  auto y = random_floats(n, 1, -3, 3), residual = random_floats(n, 2, -3, 3), bias = random_floats(C, 3),
       gamma = random_floats(C, 4, 0.5f, 1.5f), beta = random_floats(C, 5), d_out = random_floats(n, 6);
  const loom::Tensor no_tensor{};

  // The separate ops, as the encoder layer runs them.
  std::vector<float> tmp(y), x1(n), h(n), mean(R), rstd(R);
  if (k.bias) backend().bias_add(view(tmp, {R, C}), view(bias, {C}));
  if (k.p > 0) backend().dropout_forward(view(tmp, {R, C}), view(tmp, {R, C}), k.p, seed, offset);
  backend().add(view(tmp, {R, C}), view(residual, {R, C}), view(x1, {R, C}));
  backend().layernorm_forward(view(x1, {R, C}), view(gamma, {C}), view(beta, {C}), eps, view(h, {R, C}),
                              view(mean, {R}), view(rstd, {R}));
  std::vector<uint16_t> h16(n), fused_h16(n, 0xFFFF);
  const auto view16 = [&](std::vector<uint16_t>& v) {
    return loom::Tensor::contiguous(v.data(), k.compute, {R, C}, loom::Device{});
  };
  if (k.compute != loom::DType::f32) backend().cast(view(h, {R, C}), view16(h16));
  std::vector<float> d_res(n), d_dense(n), dgamma(C, 0.25f), dbeta(C, -0.25f), dbias(C, 0.5f);
  backend().layernorm_backward(view(d_out, {R, C}), view(x1, {R, C}), view(gamma, {C}), view(mean, {R}),
                               view(rstd, {R}), view(d_res, {R, C}), view(dgamma, {C}), view(dbeta, {C}),
                               false);
  if (k.p > 0)
    backend().dropout_backward(view(d_res, {R, C}), view(d_dense, {R, C}), k.p, seed, offset);
  else
    d_dense = d_res;
  if (k.bias) backend().bias_grad(view(d_dense, {R, C}), view(dbias, {C}));

  // The fused op.
  std::vector<float> sum(n), fused_h(n), fused_mean(R), fused_rstd(R);
  backend().residual_layernorm_forward(view(y, {R, C}), k.bias ? view(bias, {C}) : no_tensor,
                                       view(residual, {R, C}), k.p, seed, offset, view(gamma, {C}),
                                       view(beta, {C}), eps, view(sum, {R, C}), view(fused_h, {R, C}),
                                       k.compute != loom::DType::f32 ? view16(fused_h16) : no_tensor,
                                       view(fused_mean, {R}), view(fused_rstd, {R}));
  EXPECT_TRUE(same_bits(sum, x1)) << "sum";
  EXPECT_TRUE(same_bits(fused_h, h)) << "out";
  EXPECT_TRUE(same_bits(fused_mean, mean)) << "mean";
  EXPECT_TRUE(same_bits(fused_rstd, rstd)) << "rstd";
  if (k.compute != loom::DType::f32) {
    EXPECT_TRUE(same_bits(fused_h16, h16)) << "out_compute";
  }

  std::vector<float> d_sum(n), d_branch(n), fused_dgamma(C, 0.25f), fused_dbeta(C, -0.25f),
      fused_dbias(C, 0.5f);
  backend().residual_layernorm_backward(view(d_out, {R, C}), view(sum, {R, C}), view(gamma, {C}),
                                        view(fused_mean, {R}), view(fused_rstd, {R}), k.p, seed, offset,
                                        view(d_sum, {R, C}), view(d_branch, {R, C}), view(fused_dgamma, {C}),
                                        view(fused_dbeta, {C}), k.bias ? view(fused_dbias, {C}) : no_tensor);
  EXPECT_TRUE(same_bits(d_sum, d_res)) << "d_sum";
  EXPECT_TRUE(same_bits(d_branch, d_dense)) << "d_branch";
  EXPECT_TRUE(same_bits(fused_dgamma, dgamma)) << "dgamma";
  EXPECT_TRUE(same_bits(fused_dbeta, dbeta)) << "dbeta";
  EXPECT_TRUE(same_bits(fused_dbias, dbias)) << "dbias";
  if (k.p > 0) {  // the mask really dropped some elements, and kept some
    int64_t dropped = 0;
    for (int64_t i = 0; i < n; ++i) dropped += d_branch[i] == 0.0f && d_sum[i] != 0.0f;
    EXPECT_GT(dropped, 0);
    EXPECT_LT(dropped, n);
  }
}

TEST(ResidualLayerNorm, EqualsTheSeparateOpsBitForBit) {
  for (const Case& k :
       {Case{3, 20, 0.0f, true, loom::DType::f32}, Case{37, 769, 0.1f, true, loom::DType::bf16},
        Case{37, 769, 0.1f, false, loom::DType::f16}, Case{5, 13, 0.5f, true, loom::DType::f32},
        // 256 × 768: above the parallel threshold, rows split across threads.
        Case{256, 768, 0.1f, true, loom::DType::bf16}})
    check_against_separate_ops(k);
}

TEST(ResidualLayerNorm, SumMayAliasY) {
  const int64_t R = 4, C = 10;
  auto y = random_floats(R * C, 7), residual = random_floats(R * C, 8), bias = random_floats(C, 9),
       gamma = random_floats(C, 10), beta = random_floats(C, 11);
  std::vector<float> separate_sum(R * C), out(R * C), mean(R), rstd(R), out2(R * C);
  backend().residual_layernorm_forward(view(y, {R, C}), view(bias, {C}), view(residual, {R, C}), 0.2f, 3, 0,
                                       view(gamma, {C}), view(beta, {C}), 1e-5f, view(separate_sum, {R, C}),
                                       view(out, {R, C}), loom::Tensor{}, view(mean, {R}), view(rstd, {R}));
  backend().residual_layernorm_forward(view(y, {R, C}), view(bias, {C}), view(residual, {R, C}), 0.2f, 3, 0,
                                       view(gamma, {C}), view(beta, {C}), 1e-5f, view(y, {R, C}),
                                       view(out2, {R, C}), loom::Tensor{}, view(mean, {R}), view(rstd, {R}));
  EXPECT_TRUE(same_bits(y, separate_sum));
  EXPECT_TRUE(same_bits(out2, out));
}

TEST(ResidualLayerNorm, BadArgumentsAreNamed) {
  const int64_t R = 2, C = 8;
  auto y = random_floats(R * C, 1), residual = random_floats(R * C, 2), bias = random_floats(C + 1, 3),
       gamma = random_floats(C, 4), beta = random_floats(C, 5);
  std::vector<float> sum(R * C), out(R * C), mean(R), rstd(R);
  try {
    backend().residual_layernorm_forward(view(y, {R, C}), view(bias, {C + 1}), view(residual, {R, C}), 0.1f,
                                         1, 0, view(gamma, {C}), view(beta, {C}), 1e-5f, view(sum, {R, C}),
                                         view(out, {R, C}), loom::Tensor{}, view(mean, {R}), view(rstd, {R}));
    FAIL() << "a bias of the wrong length was accepted";
  } catch (const loom::Error& e) {
    EXPECT_NE(std::string(e.what()).find("residual_layernorm_forward: bias"), std::string::npos) << e.what();
  }
  EXPECT_THROW(backend().residual_layernorm_forward(view(y, {R, C}), loom::Tensor{}, view(residual, {R, C}),
                                                    1.0f, 1, 0, view(gamma, {C}), view(beta, {C}), 1e-5f,
                                                    view(sum, {R, C}), view(out, {R, C}), loom::Tensor{},
                                                    view(mean, {R}), view(rstd, {R})),
               loom::Error);  // p must be below 1
  std::vector<float> d(R * C), d_branch(R * C), dg(C), db(C);
  EXPECT_THROW(
      backend().residual_layernorm_backward(view(d, {R, C}), view(sum, {R, C}), view(gamma, {C}),
                                            view(mean, {R}), view(rstd, {R}), 0.1f, 1, 0, view(d, {R, C}),
                                            view(d, {R, C}), view(dg, {C}), view(db, {C}), loom::Tensor{}),
      loom::Error);  // d_branch aliasing d_out
}

}  // namespace
