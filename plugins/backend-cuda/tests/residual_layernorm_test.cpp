// ResidualLayerNorm on the GPU against backend/cpu running the ops it fuses — forward: bias_add,
// dropout_forward, add, layernorm_forward; backward: layernorm_backward, dropout_backward,
// bias_grad — at odd sizes (the scalar path), C % 4 == 0 (float4 accesses), every row width the
// kernels cut differently, Philox offsets that start inside a block, aliasing, and the production
// size (B·T = 128·128 rows of 1024: more rows than the grid has blocks, so the row loops iterate).
//
// Tolerances, and why:
// - sum: bit-identical. The kernel rounds y + bias, × 1/(1 − p) and + residual once each, as the
//   unfused ops do. The dropout mask (the zero pattern of sum − residual) is therefore the CPU's.
// - out_compute: bit-identical to the GPU's own f32 out rounded to bf16/f16 (rounded once).
//   d_branch: bit-identical to dropout_backward of the GPU's own d_sum, zeros where the CPU's are.
// - mean, rstd, out, d_sum: they differ from the CPU only by the order of the row sums (a block tree
//   against the CPU's loop) and rsqrtf (≤ 2 ulp): ~1e-6 relative on the mean and variance for these
//   inputs (|sum| < 4), so ≤ ~5e-6 on out (|x̂·γ| < 6) and d_sum. rtol 1e-5 with atol 3e-5 (out,
//   d_sum, d_branch), atol 1e-6 for the mean (values near 0).
// - dgamma, dbeta, dbias: sums over the rows, in tiles against the CPU's row order, whose rounding
//   grows with the rows: rtol 1e-5, atol 1e-5 + 2e-7·rows (3.3e-3 at 16384 rows, about four times
//   the expected worst column of sums that reach ~10²).
#include <algorithm>
#include <string>
#include <vector>

#include "cuda_test_support.hpp"

namespace loom_cuda_test {
namespace {

using loom::DType;

constexpr float kEps = 1e-5f;
constexpr uint64_t kSeed = 0x5eed0123456789abull;

struct Case {
  int64_t rows, cols;
  bool bias;
  float p;
  DType compute;  // f32: no out_compute
  uint64_t offset;

  bool has_compute() const { return compute != DType::f32; }
  std::vector<int64_t> shape() const { return {rows, cols}; }
  std::string name() const {
    return "rows=" + std::to_string(rows) + " C=" + std::to_string(cols) + (bias ? " bias" : " no bias") +
           " p=" + std::to_string(p) +
           " out_compute=" + (has_compute() ? loom::dtype_name(compute) : "absent") +
           " offset=" + std::to_string(offset);
  }
};

/// A case's inputs and what backend/cpu's unfused ops make of them.
struct Reference {
  HostTensor y, bias, residual, gamma, beta;         // forward inputs
  HostTensor sum, out, mean, rstd;                   // forward results
  HostTensor d_out, dgamma0, dbeta0, dbias0;         // backward inputs (the accumulators' start)
  HostTensor d_sum, d_branch, dgamma, dbeta, dbias;  // backward results
};

Reference unfused(loom_cpu::CpuBackend& cpu, const Case& c) {
  const int64_t n = c.rows * c.cols;
  const auto shape = c.shape();
  Reference r;
  r.y = HostTensor::of(random_floats(n, 1), DType::f32, shape);
  r.bias = HostTensor::of(random_floats(c.cols, 2, -0.5f, 0.5f), DType::f32, {c.cols});
  r.residual = HostTensor::of(random_floats(n, 3, -2.0f, 2.0f), DType::f32, shape);
  r.gamma = HostTensor::of(random_floats(c.cols, 4, 0.5f, 1.5f), DType::f32, {c.cols});
  r.beta = HostTensor::of(random_floats(c.cols, 5), DType::f32, {c.cols});
  HostTensor branch = r.y;
  if (c.bias) cpu.bias_add(branch.view(), r.bias.view());
  cpu.dropout_forward(branch.view(), branch.view(), c.p, kSeed, c.offset);
  r.sum = HostTensor::zeros(DType::f32, shape);
  cpu.add(branch.view(), r.residual.view(), r.sum.view());
  r.out = HostTensor::zeros(DType::f32, shape);
  r.mean = HostTensor::zeros(DType::f32, {c.rows});
  r.rstd = HostTensor::zeros(DType::f32, {c.rows});
  cpu.layernorm_forward(r.sum.view(), r.gamma.view(), r.beta.view(), kEps, r.out.view(), r.mean.view(),
                        r.rstd.view());

  r.d_out = HostTensor::of(random_floats(n, 6), DType::f32, shape);
  r.dgamma0 = HostTensor::of(random_floats(c.cols, 7), DType::f32, {c.cols});
  r.dbeta0 = HostTensor::of(random_floats(c.cols, 8), DType::f32, {c.cols});
  r.dbias0 = HostTensor::of(random_floats(c.cols, 9), DType::f32, {c.cols});
  r.d_sum = HostTensor::zeros(DType::f32, shape);
  r.dgamma = r.dgamma0;
  r.dbeta = r.dbeta0;
  cpu.layernorm_backward(r.d_out.view(), r.sum.view(), r.gamma.view(), r.mean.view(), r.rstd.view(),
                         r.d_sum.view(), r.dgamma.view(), r.dbeta.view(), false);
  r.d_branch = HostTensor::zeros(DType::f32, shape);
  cpu.dropout_backward(r.d_sum.view(), r.d_branch.view(), c.p, kSeed, c.offset);
  r.dbias = r.dbias0;
  if (c.bias) cpu.bias_grad(r.d_branch.view(), r.dbias.view());
  return r;
}

/// Expects `actual` and `expected` to be exactly 0 at the same elements (a dropout mask).
void expect_same_zeros(const std::vector<float>& actual, const std::vector<float>& expected,
                       const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < actual.size(); ++i)
    if ((actual[i] == 0.0f) != (expected[i] == 0.0f)) {
      ADD_FAILURE() << what << ": element " << i << " is " << actual[i] << ", expected " << expected[i]
                    << " (the masks differ)";
      return;
    }
}

/// sum − residual per element: exactly 0 where dropout dropped y + bias.
std::vector<float> branch_of(const HostTensor& sum, const HostTensor& residual) {
  std::vector<float> s = sum.floats();
  const std::vector<float> r = residual.floats();
  for (size_t i = 0; i < s.size(); ++i) s[i] -= r[i];
  return s;
}

/// `call` throws a loom::Error whose message holds every one of `words`.
template <typename Call>
void expect_error_naming(Call&& call, const std::vector<std::string>& words) {
  try {
    call();
  } catch (const loom::Error& e) {
    const std::string message = e.what();
    for (const std::string& word : words)
      EXPECT_NE(message.find(word), std::string::npos) << "\"" << word << "\" missing from: " << message;
    return;
  }
  ADD_FAILURE() << "no loom::Error was thrown (expected one naming " << words.front() << ")";
}

class ResidualLayerNormTest : public CudaOpTest {
 protected:
  /// The fused forward and backward of case `c` on the GPU against the unfused ops on the CPU. The
  /// backward gets the CPU's forward results, so it sees exactly the CPU backward's inputs.
  void expect_matches_unfused(const Case& c) {
    SCOPED_TRACE(c.name());
    Reference r = unfused(cpu, c);
    const auto shape = c.shape();
    const double sum_atol = 1e-5 + 2e-7 * static_cast<double>(c.rows);

    DeviceTensor y = upload(r.y), bias = upload(r.bias), residual = upload(r.residual),
                 gamma = upload(r.gamma), beta = upload(r.beta);
    DeviceTensor sum = upload(HostTensor::zeros(DType::f32, shape)),
                 out = upload(HostTensor::zeros(DType::f32, shape)),
                 out_compute = upload(HostTensor::zeros(c.has_compute() ? c.compute : DType::bf16, shape)),
                 mean = upload(HostTensor::zeros(DType::f32, {c.rows})),
                 rstd = upload(HostTensor::zeros(DType::f32, {c.rows}));
    gpu->residual_layernorm_forward(y.view(), c.bias ? bias.view() : loom::Tensor{}, residual.view(), c.p,
                                    kSeed, c.offset, gamma.view(), beta.view(), kEps, sum.view(), out.view(),
                                    c.has_compute() ? out_compute.view() : loom::Tensor{}, mean.view(),
                                    rstd.view());
    const HostTensor sum_g = sum.download(*gpu), out_g = out.download(*gpu);
    expect_equal(sum_g.floats(), r.sum.floats(), "sum");
    const std::vector<float> kept = branch_of(sum_g, r.residual);
    expect_same_zeros(kept, branch_of(r.sum, r.residual), "dropout mask (sum - residual)");
    if (c.p > 0.0f && kept.size() >= 1000) {
      EXPECT_GT(std::count(kept.begin(), kept.end(), 0.0f), 0) << "p > 0 but nothing was dropped";
    }
    expect_close(out_g.floats(), r.out.floats(), 1e-5, 3e-5, "out");
    expect_close(mean.download(*gpu).floats(), r.mean.floats(), 1e-5, 1e-6, "mean");
    expect_close(rstd.download(*gpu).floats(), r.rstd.floats(), 1e-5, 0.0, "rstd");
    if (c.has_compute())
      expect_equal(out_compute.download(*gpu).floats(),
                   HostTensor::of(out_g.floats(), c.compute, shape).floats(),
                   std::string("out_compute against the f32 out rounded to ") + loom::dtype_name(c.compute));

    DeviceTensor d_out = upload(r.d_out), sum_in = upload(r.sum), mean_in = upload(r.mean),
                 rstd_in = upload(r.rstd), d_sum = upload(HostTensor::zeros(DType::f32, shape)),
                 d_branch = upload(HostTensor::zeros(DType::f32, shape)), dgamma = upload(r.dgamma0),
                 dbeta = upload(r.dbeta0), dbias = upload(r.dbias0);
    gpu->residual_layernorm_backward(d_out.view(), sum_in.view(), gamma.view(), mean_in.view(),
                                     rstd_in.view(), c.p, kSeed, c.offset, d_sum.view(), d_branch.view(),
                                     dgamma.view(), dbeta.view(), c.bias ? dbias.view() : loom::Tensor{});
    HostTensor d_sum_g = d_sum.download(*gpu);
    const std::vector<float> d_branch_g = d_branch.download(*gpu).floats();
    expect_close(d_sum_g.floats(), r.d_sum.floats(), 1e-5, 3e-5, "d_sum");
    HostTensor own_mask = HostTensor::zeros(DType::f32, shape);
    cpu.dropout_backward(d_sum_g.view(), own_mask.view(), c.p, kSeed, c.offset);
    expect_equal(d_branch_g, own_mask.floats(), "d_branch against dropout_backward of the GPU's d_sum");
    expect_same_zeros(d_branch_g, r.d_branch.floats(), "d_branch mask");
    expect_close(d_branch_g, r.d_branch.floats(), 1e-5, 3e-5, "d_branch");
    expect_close(dgamma.download(*gpu).floats(), r.dgamma.floats(), 1e-5, sum_atol, "dgamma");
    expect_close(dbeta.download(*gpu).floats(), r.dbeta.floats(), 1e-5, sum_atol, "dbeta");
    if (c.bias)
      expect_close(dbias.download(*gpu).floats(), r.dbias.floats(), 1e-5, sum_atol, "dbias");
    else
      expect_equal(dbias.download(*gpu).floats(), r.dbias0.floats(), "dbias (absent: untouched)");
  }
};

TEST_F(ResidualLayerNormTest, MatchesTheUnfusedOpsAtOddSizes) {
  // C = 20: float4 accesses, one warp per row; C = 769: the scalar path. Offset 7 starts every
  // quad's dropout words inside a Philox block.
  for (int64_t cols : {int64_t{20}, int64_t{769}})
    for (int64_t rows : {int64_t{3}, int64_t{37}})
      for (bool bias : {true, false})
        for (float p : {0.0f, 0.1f})
          for (DType compute : {DType::f32, DType::bf16, DType::f16})
            for (uint64_t offset : {uint64_t{0}, uint64_t{7}}) {
              expect_matches_unfused({rows, cols, bias, p, compute, offset});
              if (HasFatalFailure()) return;
            }
}

TEST_F(ResidualLayerNormTest, MatchesTheUnfusedOpsForEveryRowWidth) {
  // 1, 2, 4 and 8 quads of columns per thread (C = 1024, 1500, 2052, 4100), the widest row
  // (16384, 512 threads × 8 quads) and its scalar neighbour (16383); an offset past 2^32.
  for (int64_t cols :
       {int64_t{1024}, int64_t{1500}, int64_t{2052}, int64_t{4100}, int64_t{16383}, int64_t{16384}}) {
    expect_matches_unfused({5, cols, true, 0.1f, DType::bf16, (uint64_t{1} << 33) + 5});
    if (HasFatalFailure()) return;
  }
}

TEST_F(ResidualLayerNormTest, MatchesTheUnfusedOpsAtProductionSize) {
  // BERT-large's residual stream for batch 128 × sequence 128.
  expect_matches_unfused({16384, 1024, true, 0.1f, DType::bf16, 12345});
}

TEST_F(ResidualLayerNormTest, SumAndDSumMayAliasTheirInputsAndRunsRepeatBitForBit) {
  for (int64_t cols : {int64_t{769}, int64_t{1024}}) {
    const Case c{37, cols, true, 0.1f, DType::bf16, 3};
    SCOPED_TRACE(c.name());
    Reference r = unfused(cpu, c);
    const auto shape = c.shape();
    DeviceTensor y = upload(r.y), bias = upload(r.bias), residual = upload(r.residual),
                 gamma = upload(r.gamma), beta = upload(r.beta),
                 out = upload(HostTensor::zeros(DType::f32, shape)),
                 mean = upload(HostTensor::zeros(DType::f32, {c.rows})),
                 rstd = upload(HostTensor::zeros(DType::f32, {c.rows}));
    const auto forward = [&](const DeviceTensor& y_in, const DeviceTensor& residual_in,
                             const DeviceTensor& sum) {
      gpu->residual_layernorm_forward(y_in.view(), bias.view(), residual_in.view(), c.p, kSeed, c.offset,
                                      gamma.view(), beta.view(), kEps, sum.view(), out.view(), loom::Tensor{},
                                      mean.view(), rstd.view());
      return std::vector<std::vector<float>>{sum.download(*gpu).floats(), out.download(*gpu).floats(),
                                             mean.download(*gpu).floats(), rstd.download(*gpu).floats()};
    };
    DeviceTensor sum = upload(HostTensor::zeros(DType::f32, shape));
    const auto apart = forward(y, residual, sum);
    DeviceTensor sum_on_residual = upload(r.residual);
    const auto on_residual = forward(y, sum_on_residual, sum_on_residual);
    DeviceTensor sum_on_y = upload(r.y);
    const auto on_y = forward(sum_on_y, residual, sum_on_y);
    for (size_t k = 0; k < apart.size(); ++k) {
      const std::string what = std::vector<std::string>{"sum", "out", "mean", "rstd"}[k];
      expect_equal(on_residual[k], apart[k], what + " with sum aliasing residual");
      expect_equal(on_y[k], apart[k], what + " with sum aliasing y");
    }

    DeviceTensor sum_in = upload(r.sum), mean_in = upload(r.mean), rstd_in = upload(r.rstd);
    const auto backward = [&](const DeviceTensor& d_out, const DeviceTensor& d_sum) {
      DeviceTensor d_branch = upload(HostTensor::zeros(DType::f32, shape)), dgamma = upload(r.dgamma0),
                   dbeta = upload(r.dbeta0), dbias = upload(r.dbias0);
      gpu->residual_layernorm_backward(d_out.view(), sum_in.view(), gamma.view(), mean_in.view(),
                                       rstd_in.view(), c.p, kSeed, c.offset, d_sum.view(), d_branch.view(),
                                       dgamma.view(), dbeta.view(), dbias.view());
      return std::vector<std::vector<float>>{d_sum.download(*gpu).floats(), d_branch.download(*gpu).floats(),
                                             dgamma.download(*gpu).floats(), dbeta.download(*gpu).floats(),
                                             dbias.download(*gpu).floats()};
    };
    DeviceTensor d_out = upload(r.d_out), d_sum = upload(HostTensor::zeros(DType::f32, shape));
    const auto first = backward(d_out, d_sum);
    const auto again = backward(d_out, d_sum);
    DeviceTensor d_sum_on_d_out = upload(r.d_out);
    const auto in_place = backward(d_sum_on_d_out, d_sum_on_d_out);
    for (size_t k = 0; k < first.size(); ++k) {
      const std::string what = std::vector<std::string>{"d_sum", "d_branch", "dgamma", "dbeta", "dbias"}[k];
      expect_equal(again[k], first[k], what + " of a second run");
      expect_equal(in_place[k], first[k], what + " with d_sum aliasing d_out");
    }
  }
}

TEST_F(ResidualLayerNormTest, BadArgumentsAreErrorsNamingTheOp) {
  const int64_t rows = 4, cols = 8;
  DeviceTensor x = upload(HostTensor::zeros(DType::f32, {rows, cols})),
               residual = upload(HostTensor::zeros(DType::f32, {rows, cols})),
               sum = upload(HostTensor::zeros(DType::f32, {rows, cols})),
               out = upload(HostTensor::zeros(DType::f32, {rows, cols})),
               d_branch = upload(HostTensor::zeros(DType::f32, {rows, cols})),
               vec = upload(HostTensor::zeros(DType::f32, {cols})),
               vec2 = upload(HostTensor::zeros(DType::f32, {cols})),
               short_vec = upload(HostTensor::zeros(DType::f32, {cols - 1})),
               stat = upload(HostTensor::zeros(DType::f32, {rows})),
               stat2 = upload(HostTensor::zeros(DType::f32, {rows}));
  expect_error_naming(
      [&] {
        gpu->residual_layernorm_forward(x.view(), short_vec.view(), residual.view(), 0.1f, 1, 0, vec.view(),
                                        vec2.view(), kEps, sum.view(), out.view(), loom::Tensor{},
                                        stat.view(), stat2.view());
      },
      {"residual_layernorm_forward", "bias"});
  expect_error_naming(
      [&] {
        gpu->residual_layernorm_forward(x.view(), vec.view(), residual.view(), 1.0f, 1, 0, vec.view(),
                                        vec2.view(), kEps, sum.view(), out.view(), loom::Tensor{},
                                        stat.view(), stat2.view());
      },
      {"residual_layernorm_forward", "drop probability"});
  expect_error_naming(
      [&] {
        gpu->residual_layernorm_backward(x.view(), sum.view(), vec.view(), stat.view(), stat2.view(), 0.1f, 1,
                                         0, residual.view(), d_branch.view(), vec.view(), vec2.view(),
                                         short_vec.view());
      },
      {"residual_layernorm_backward", "dbias"});
  // Wider rows than a block's registers hold: this backend's own limit, named.
  const int64_t wide = 16384 + 4;
  DeviceTensor wide_x = upload(HostTensor::zeros(DType::f32, {1, wide})),
               wide_sum = upload(HostTensor::zeros(DType::f32, {1, wide})),
               wide_out = upload(HostTensor::zeros(DType::f32, {1, wide})),
               wide_vec = upload(HostTensor::zeros(DType::f32, {wide})),
               one = upload(HostTensor::zeros(DType::f32, {1})),
               one2 = upload(HostTensor::zeros(DType::f32, {1}));
  expect_error_naming(
      [&] {
        gpu->residual_layernorm_forward(wide_x.view(), loom::Tensor{}, wide_x.view(), 0.0f, 1, 0,
                                        wide_vec.view(), wide_vec.view(), kEps, wide_sum.view(),
                                        wide_out.view(), loom::Tensor{}, one.view(), one2.view());
      },
      {"residual_layernorm_forward", "16384"});
}

}  // namespace
}  // namespace loom_cuda_test
