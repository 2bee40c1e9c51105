// ResidualLayerNorm (loom::ResidualLayerNorm, on backends that offer it) against the separate ops it
// replaces, run on the reference — forward: bias_add, dropout_forward, add, layernorm_forward and
// cast; backward: layernorm_backward, dropout_backward, bias_grad — with and without bias, dropout
// and a 16-bit out_compute, at odd sizes (C % 4 ≠ 0 and = 0), every row width a kernel may cut
// differently (up to 16,384), Philox offsets that start inside a block, rows enough for parallel
// paths, more rows than 2,048 tiles of 16 hold (a GPU's fused backward then takes longer tiles and
// a short last one), and at production size (128·128 rows of 1,024); sum and d_sum aliasing their inputs,
// reruns bit for bit; bad arguments named. ResidualLayerNormBackwardCopy: the backward's results
// bit for bit, and its copy the bits of cast(d_branch) on the same backend.
//
// What must agree, and how closely:
// - Where the backend runs backend/cpu's code, everything is the separate ops' bits (it runs
//   their arithmetic row by row), so runs with and without the op give the same losses.
// - Elsewhere: sum bit for bit (y + bias, × 1/(1 − p) and + residual each rounded once), so the
//   dropout mask (the zero pattern of sum − residual) is the reference's; out_compute the
//   backend's own f32 out rounded once; d_branch dropout_backward of its own d_sum, zeros where the
//   reference's are. mean, rstd, out, d_sum differ only by the order of the row sums and rsqrt:
//   kRowSumOrder*; dγ, dβ, dbias are column sums: column_sums(rows).
#include <algorithm>

#include "backend_op_case.hpp"
#include "loom/sdk/ops/residual_layernorm.hpp"
#include "loom/sdk/ops/residual_layernorm_backward_copy.hpp"

namespace loom_backend_ops {
namespace {

using loom::DType;

struct Case {
  int64_t rows, cols;
  bool bias;
  float p;
  DType compute;  // f32: no out_compute
  uint64_t offset;
  float eps = 1e-5f;
  uint64_t seed = 0x5eed0123456789abull;

  bool has_compute() const { return compute != DType::f32; }
  std::vector<int64_t> shape() const { return {rows, cols}; }
  std::string name() const {
    return "rows=" + std::to_string(rows) + " C=" + std::to_string(cols) + (bias ? " bias" : " no bias") +
           " p=" + std::to_string(p) +
           " out_compute=" + (has_compute() ? loom::dtype_name(compute) : "absent") +
           " offset=" + std::to_string(offset) + " eps=" + std::to_string(eps);
  }
};

/// A case's inputs and what the reference's separate ops make of them.
struct Separate {
  HostTensor y, bias, residual, gamma, beta;         // forward inputs
  HostTensor sum, out, out_compute, mean, rstd;      // forward results
  HostTensor d_out, dgamma0, dbeta0, dbias0;         // backward inputs (the accumulators' start)
  HostTensor d_sum, d_branch, dgamma, dbeta, dbias;  // backward results
};

Separate separate_ops(loom::Backend& reference, const Case& c) {
  const int64_t n = c.rows * c.cols;
  const auto shape = c.shape();
  Separate r;
  r.y = HostTensor::of(random_floats(n, 1), DType::f32, shape);
  r.bias = HostTensor::of(random_floats(c.cols, 2, -0.5f, 0.5f), DType::f32, {c.cols});
  r.residual = HostTensor::of(random_floats(n, 3, -2.0f, 2.0f), DType::f32, shape);
  r.gamma = HostTensor::of(random_floats(c.cols, 4, 0.5f, 1.5f), DType::f32, {c.cols});
  r.beta = HostTensor::of(random_floats(c.cols, 5), DType::f32, {c.cols});
  HostTensor branch = r.y;
  if (c.bias) reference.bias_add(branch.view(), r.bias.view());
  reference.dropout_forward(branch.view(), branch.view(), c.p, c.seed, c.offset);
  r.sum = HostTensor::zeros(DType::f32, shape);
  reference.add(branch.view(), r.residual.view(), r.sum.view());
  r.out = HostTensor::zeros(DType::f32, shape);
  r.mean = HostTensor::zeros(DType::f32, {c.rows});
  r.rstd = HostTensor::zeros(DType::f32, {c.rows});
  reference.layernorm_forward(r.sum.view(), r.gamma.view(), r.beta.view(), c.eps, r.out.view(), r.mean.view(),
                              r.rstd.view());
  r.out_compute = HostTensor::zeros(c.has_compute() ? c.compute : DType::bf16, shape);
  if (c.has_compute()) reference.cast(r.out.view(), r.out_compute.view());

  r.d_out = HostTensor::of(random_floats(n, 6), DType::f32, shape);
  r.dgamma0 = HostTensor::of(random_floats(c.cols, 7), DType::f32, {c.cols});
  r.dbeta0 = HostTensor::of(random_floats(c.cols, 8), DType::f32, {c.cols});
  r.dbias0 = HostTensor::of(random_floats(c.cols, 9), DType::f32, {c.cols});
  r.d_sum = HostTensor::zeros(DType::f32, shape);
  r.dgamma = r.dgamma0;
  r.dbeta = r.dbeta0;
  reference.layernorm_backward(r.d_out.view(), r.sum.view(), r.gamma.view(), r.mean.view(), r.rstd.view(),
                               r.d_sum.view(), r.dgamma.view(), r.dbeta.view(), false);
  r.d_branch = HostTensor::zeros(DType::f32, shape);
  reference.dropout_backward(r.d_sum.view(), r.d_branch.view(), c.p, c.seed, c.offset);
  r.dbias = r.dbias0;
  if (c.bias) reference.bias_grad(r.d_branch.view(), r.dbias.view());
  return r;
}

/// sum − residual per element: exactly 0 where dropout dropped y + bias.
std::vector<float> branch_of(const std::vector<float>& sum, const HostTensor& residual) {
  std::vector<float> s = sum;
  const std::vector<float> r = residual.floats();
  for (size_t i = 0; i < s.size(); ++i) s[i] -= r[i];
  return s;
}

class ResidualLayerNormCase : public BackendOpCase {
 protected:
  /// Bit for bit where the backend runs backend/cpu's code, else within `tolerance`.
  void expect_matches(const std::vector<float>& actual, const std::vector<float>& expected,
                      Tolerance tolerance, const std::string& what) const {
    if (runs_reference_code())
      expect_equal(actual, expected, what + " (backend/cpu's code: bit for bit)");
    else
      expect_close(actual, expected, tolerance, what);
  }

  /// The fused forward and backward of case `c` against the separate ops on the reference. The
  /// backward gets the reference's forward results, so it sees exactly the separate backward's inputs.
  void expect_matches_separate_ops(loom::ResidualLayerNorm& op, const Case& c) {
    SCOPED_TRACE(c.name());
    const Separate r = separate_ops(reference(), c);
    const auto shape = c.shape();
    const Tolerance sums = column_sums(c.rows);

    DeviceTensor y = upload(r.y), bias = upload(r.bias), residual = upload(r.residual),
                 gamma = upload(r.gamma), beta = upload(r.beta), sum = upload_zeros(DType::f32, shape),
                 out = upload_zeros(DType::f32, shape),
                 out_compute = upload_zeros(r.out_compute.dtype, shape),
                 mean = upload_zeros(DType::f32, {c.rows}), rstd = upload_zeros(DType::f32, {c.rows});
    op.residual_layernorm_forward(y.view(), c.bias ? bias.view() : loom::Tensor{}, residual.view(), c.p,
                                  c.seed, c.offset, gamma.view(), beta.view(), c.eps, sum.view(), out.view(),
                                  c.has_compute() ? out_compute.view() : loom::Tensor{}, mean.view(),
                                  rstd.view());
    const std::vector<float> sum_values = read(sum), out_values = read(out);
    expect_equal(sum_values, r.sum.floats(), "sum");
    const std::vector<float> kept = branch_of(sum_values, r.residual);
    expect_same_zeros(kept, branch_of(r.sum.floats(), r.residual), "dropout mask (sum - residual)");
    // The mask really dropped some elements, and kept some, wherever ≥ 20 drops are expected.
    if (c.p > 0.0f && c.p * static_cast<double>(kept.size()) >= 20) {
      const auto dropped = std::count(kept.begin(), kept.end(), 0.0f);
      EXPECT_GT(dropped, 0) << "p > 0 but nothing was dropped";
      EXPECT_LT(dropped, static_cast<long>(kept.size())) << "everything was dropped";
    }
    expect_matches(out_values, r.out.floats(), kRowSumOrderOutput, "out");
    expect_matches(read(mean), r.mean.floats(), kRowSumOrderMean, "mean");
    expect_matches(read(rstd), r.rstd.floats(), kRowSumOrderRstd, "rstd");
    if (c.has_compute()) {
      expect_same_bits(out_compute.download(), HostTensor::of(out_values, c.compute, shape),
                       std::string("out_compute: the f32 out rounded to ") + loom::dtype_name(c.compute));
      if (runs_reference_code()) expect_same_bits(out_compute.download(), r.out_compute, "out_compute");
    }

    DeviceTensor d_out = upload(r.d_out), sum_in = upload(r.sum), mean_in = upload(r.mean),
                 rstd_in = upload(r.rstd), d_sum = upload_zeros(DType::f32, shape),
                 d_branch = upload_zeros(DType::f32, shape), dgamma = upload(r.dgamma0),
                 dbeta = upload(r.dbeta0), dbias = upload(r.dbias0);
    op.residual_layernorm_backward(d_out.view(), sum_in.view(), gamma.view(), mean_in.view(), rstd_in.view(),
                                   c.p, c.seed, c.offset, d_sum.view(), d_branch.view(), dgamma.view(),
                                   dbeta.view(), c.bias ? dbias.view() : loom::Tensor{});
    HostTensor d_sum_values = d_sum.download();
    const std::vector<float> d_branch_values = read(d_branch);
    expect_matches(d_sum_values.floats(), r.d_sum.floats(), kRowSumOrderOutput, "d_sum");
    HostTensor own_mask = HostTensor::zeros(DType::f32, shape);
    reference().dropout_backward(d_sum_values.view(), own_mask.view(), c.p, c.seed, c.offset);
    expect_equal(d_branch_values, own_mask.floats(), "d_branch: dropout_backward of the backend's d_sum");
    expect_same_zeros(d_branch_values, r.d_branch.floats(), "d_branch mask");
    expect_matches(d_branch_values, r.d_branch.floats(), kRowSumOrderOutput, "d_branch");
    expect_matches(read(dgamma), r.dgamma.floats(), sums, "dgamma");
    expect_matches(read(dbeta), r.dbeta.floats(), sums, "dbeta");
    if (c.bias)
      expect_matches(read(dbias), r.dbias.floats(), sums, "dbias");
    else
      expect_equal(read(dbias), r.dbias0.floats(), "dbias (absent: untouched)");
  }
};

LOOM_BACKEND_OP_FAMILY_OF(ResidualLayerNorm, ResidualLayerNormCase);

TEST_P(ResidualLayerNorm, MatchesTheSeparateOpsAtOddSizes) {
  LOOM_OFFERED_OR_SKIP(loom::ResidualLayerNorm, op);
  // C = 20: float4 accesses, one warp per row on a GPU; C = 769: scalar paths. Offset 7 starts
  // every quad's dropout words inside a Philox block.
  for (int64_t cols : {int64_t{20}, int64_t{769}})
    for (int64_t rows : {int64_t{3}, int64_t{37}})
      for (bool bias : {true, false})
        for (float p : {0.0f, 0.1f})
          for (DType compute : {DType::f32, DType::bf16, DType::f16})
            for (uint64_t offset : {uint64_t{0}, uint64_t{7}}) {
              expect_matches_separate_ops(*op, {rows, cols, bias, p, compute, offset});
              if (HasFatalFailure()) return;
            }
  // LayerNorm's eps of BERT (1e-12), p = 0.5, and 256 × 768: rows enough for backend/cpu's
  // parallel path.
  for (const Case& c : {Case{3, 20, true, 0.0f, DType::f32, 1ull << 40, 1e-12f, 0x5eed + 20},
                        Case{37, 769, true, 0.1f, DType::bf16, 1ull << 40, 1e-12f, 0x5eed + 769},
                        Case{37, 769, false, 0.1f, DType::f16, 1ull << 40, 1e-12f, 0x5eed + 769},
                        Case{5, 13, true, 0.5f, DType::f32, 1ull << 40, 1e-12f, 0x5eed + 13},
                        Case{256, 768, true, 0.1f, DType::bf16, 1ull << 40, 1e-12f, 0x5eed + 768}}) {
    expect_matches_separate_ops(*op, c);
    if (HasFatalFailure()) return;
  }
}

TEST_P(ResidualLayerNorm, MatchesTheSeparateOpsForEveryRowWidth) {
  LOOM_OFFERED_OR_SKIP(loom::ResidualLayerNorm, op);
  // 1, 2, 4 and 8 quads of columns per GPU thread (C = 1024, 1500, 2052, 4100), the widest row
  // (16384, 512 threads × 8 quads) and its scalar neighbour (16383); an offset past 2^32.
  for (int64_t cols :
       {int64_t{1024}, int64_t{1500}, int64_t{2052}, int64_t{4100}, int64_t{16383}, int64_t{16384}}) {
    expect_matches_separate_ops(*op, {5, cols, true, 0.1f, DType::bf16, (uint64_t{1} << 33) + 5});
    if (HasFatalFailure()) return;
  }
}

TEST_P(ResidualLayerNorm, MatchesTheSeparateOpsOverMoreRowsThanTwoThousandTilesOfSixteen) {
  // 40,001 rows: backend/cuda's fused backward sums tiles of 20 rows (2,001 of them, the last one
  // row); C = 24 with float4 accesses and C = 26 without.
  LOOM_OFFERED_OR_SKIP(loom::ResidualLayerNorm, op);
  for (int64_t cols : {int64_t{24}, int64_t{26}}) {
    expect_matches_separate_ops(*op, {40001, cols, true, 0.1f, DType::bf16, 99});
    if (HasFatalFailure()) return;
  }
}

TEST_P(ResidualLayerNorm, MatchesTheSeparateOpsAtProductionSize) {
  // BERT-large's residual stream for batch 128 × sequence 128: more rows than a GPU grid has blocks.
  LOOM_SKIP_WHERE_REFERENCE_CODE_RUNS();
  LOOM_OFFERED_OR_SKIP(loom::ResidualLayerNorm, op);
  expect_matches_separate_ops(*op, {16384, 1024, true, 0.1f, DType::bf16, 12345});
}

TEST_P(ResidualLayerNorm, SumAndDSumMayAliasTheirInputsAndRunsRepeatBitForBit) {
  LOOM_OFFERED_OR_SKIP(loom::ResidualLayerNorm, op);
  for (int64_t cols : {int64_t{10}, int64_t{769}, int64_t{1024}}) {
    const Case c{cols == 10 ? 4 : 37, cols, true, cols == 10 ? 0.2f : 0.1f, DType::bf16, 3};
    SCOPED_TRACE(c.name());
    const Separate r = separate_ops(reference(), c);
    const auto shape = c.shape();
    DeviceTensor y = upload(r.y), bias = upload(r.bias), residual = upload(r.residual),
                 gamma = upload(r.gamma), beta = upload(r.beta), out = upload_zeros(DType::f32, shape),
                 mean = upload_zeros(DType::f32, {c.rows}), rstd = upload_zeros(DType::f32, {c.rows});
    const auto forward = [&](const DeviceTensor& y_in, const DeviceTensor& residual_in,
                             const DeviceTensor& sum) {
      op->residual_layernorm_forward(y_in.view(), bias.view(), residual_in.view(), c.p, c.seed, c.offset,
                                     gamma.view(), beta.view(), c.eps, sum.view(), out.view(), loom::Tensor{},
                                     mean.view(), rstd.view());
      return std::vector<std::vector<float>>{read(sum), read(out), read(mean), read(rstd)};
    };
    DeviceTensor sum = upload_zeros(DType::f32, shape);
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
      DeviceTensor d_branch = upload_zeros(DType::f32, shape), dgamma = upload(r.dgamma0),
                   dbeta = upload(r.dbeta0), dbias = upload(r.dbias0);
      op->residual_layernorm_backward(d_out.view(), sum_in.view(), gamma.view(), mean_in.view(),
                                      rstd_in.view(), c.p, c.seed, c.offset, d_sum.view(), d_branch.view(),
                                      dgamma.view(), dbeta.view(), dbias.view());
      return std::vector<std::vector<float>>{read(d_sum), read(d_branch), read(dgamma), read(dbeta),
                                             read(dbias)};
    };
    DeviceTensor d_out = upload(r.d_out), d_sum = upload_zeros(DType::f32, shape);
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

// ResidualLayerNormBackwardCopy: d_sum, d_branch, dγ, dβ, dbias bit for bit residual_layernorm_backward's
// on the same backend, and d_branch_compute the bits of cast(d_branch) there — at a width the
// vectorized path takes (1024) and one it does not (769), with dropout and without, dbias or none,
// d_sum aliasing d_out or not; a copy that is not 16-bit, or aliases d_branch, is refused.
TEST_P(ResidualLayerNorm, BackwardCopyIsTheBackwardThenTheCast) {
  LOOM_OFFERED_OR_SKIP(loom::ResidualLayerNorm, fused);
  LOOM_OFFERED_OR_SKIP(loom::ResidualLayerNormBackwardCopy, op);
  for (int64_t cols : {int64_t{769}, int64_t{1024}})
    for (DType copy_dtype : {DType::bf16, DType::f16})
      for (bool in_place : {false, true}) {
        const bool with_bias = !in_place;
        const Case c{37, cols, with_bias, cols == 769 ? 0.1f : 0.0f, copy_dtype, 7};
        const std::string what = c.name() + (in_place ? ", d_sum aliasing d_out" : "");
        const Separate r = separate_ops(reference(), c);
        const auto shape = c.shape();
        DeviceTensor sum = upload(r.sum), gamma = upload(r.gamma), mean = upload(r.mean), rstd = upload(r.rstd);
        // Runs `backward` on fresh outputs; returns d_sum, d_branch, dγ, dβ, dbias and the copy.
        const auto run = [&](const auto& backward) {
          DeviceTensor d_out = upload(r.d_out), d_sum = upload_zeros(DType::f32, shape),
                       d_branch = upload_zeros(DType::f32, shape), copy = upload_zeros(copy_dtype, shape),
                       dgamma = upload(r.dgamma0), dbeta = upload(r.dbeta0), dbias = upload(r.dbias0);
          const DeviceTensor& d_sum_out = in_place ? d_out : d_sum;
          backward(d_out.view(), d_sum_out.view(), d_branch.view(), copy.view(), dgamma.view(), dbeta.view(),
                   with_bias ? dbias.view() : loom::Tensor{});
          return std::vector<HostTensor>{d_sum_out.download(), d_branch.download(), dgamma.download(),
                                         dbeta.download(),     dbias.download(),    copy.download()};
        };
        const auto apart = run([&](const loom::Tensor& d_out, const loom::Tensor& d_sum, const loom::Tensor& d_branch,
                                   const loom::Tensor& copy, const loom::Tensor& dgamma, const loom::Tensor& dbeta,
                                   const loom::Tensor& dbias) {
          fused->residual_layernorm_backward(d_out, sum.view(), gamma.view(), mean.view(), rstd.view(), c.p, c.seed,
                                             c.offset, d_sum, d_branch, dgamma, dbeta, dbias);
          backend().cast(d_branch, copy);
        });
        const auto together = run([&](const loom::Tensor& d_out, const loom::Tensor& d_sum,
                                      const loom::Tensor& d_branch, const loom::Tensor& copy,
                                      const loom::Tensor& dgamma, const loom::Tensor& dbeta, const loom::Tensor& dbias) {
          op->residual_layernorm_backward_copy(d_out, sum.view(), gamma.view(), mean.view(), rstd.view(), c.p,
                                               c.seed, c.offset, d_sum, d_branch, copy, dgamma, dbeta, dbias);
        });
        const char* names[] = {"d_sum", "d_branch", "dgamma", "dbeta", "dbias", "d_branch_compute"};
        for (size_t k = 0; k < apart.size(); ++k) expect_same_bits(together[k], apart[k], what + ": " + names[k]);
      }
  const int64_t rows = 4, cols = 8;
  DeviceTensor d = upload_zeros(DType::f32, {rows, cols}), sum = upload_zeros(DType::f32, {rows, cols}),
               d_sum = upload_zeros(DType::f32, {rows, cols}), d_branch = upload_zeros(DType::f32, {rows, cols}),
               f32_copy = upload_zeros(DType::f32, {rows, cols}), vec = upload_zeros(DType::f32, {cols}),
               vec2 = upload_zeros(DType::f32, {cols}), stat = upload_zeros(DType::f32, {rows}),
               stat2 = upload_zeros(DType::f32, {rows});
  const loom::Tensor over_d_branch =
      loom::Tensor::contiguous(d_branch.view().data, DType::bf16, {rows, cols}, d_branch.view().device);
  expect_error_naming(
      [&] {
        op->residual_layernorm_backward_copy(d.view(), sum.view(), vec.view(), stat.view(), stat2.view(), 0.1f, 1,
                                             0, d_sum.view(), d_branch.view(), f32_copy.view(), vec.view(),
                                             vec2.view(), loom::Tensor{});
      },
      {"residual_layernorm_backward_copy", "d_branch_compute"});
  expect_error_naming(
      [&] {
        op->residual_layernorm_backward_copy(d.view(), sum.view(), vec.view(), stat.view(), stat2.view(), 0.1f, 1,
                                             0, d_sum.view(), d_branch.view(), over_d_branch, vec.view(),
                                             vec2.view(), loom::Tensor{});
      },
      {"residual_layernorm_backward_copy", "d_branch_compute may not alias"});
}

TEST_P(ResidualLayerNorm, BadArgumentsAreErrorsNamingTheOpAndTheArgument) {
  LOOM_OFFERED_OR_SKIP(loom::ResidualLayerNorm, op);
  const int64_t rows = 4, cols = 8;
  DeviceTensor x = upload_zeros(DType::f32, {rows, cols}), residual = upload_zeros(DType::f32, {rows, cols}),
               sum = upload_zeros(DType::f32, {rows, cols}), out = upload_zeros(DType::f32, {rows, cols}),
               d = upload_zeros(DType::f32, {rows, cols}), d_branch = upload_zeros(DType::f32, {rows, cols}),
               vec = upload_zeros(DType::f32, {cols}), vec2 = upload_zeros(DType::f32, {cols}),
               short_vec = upload_zeros(DType::f32, {cols - 1}),
               long_vec = upload_zeros(DType::f32, {cols + 1}), stat = upload_zeros(DType::f32, {rows}),
               stat2 = upload_zeros(DType::f32, {rows});
  expect_error_naming(
      [&] {
        op->residual_layernorm_forward(x.view(), long_vec.view(), residual.view(), 0.1f, 1, 0, vec.view(),
                                       vec2.view(), 1e-5f, sum.view(), out.view(), loom::Tensor{},
                                       stat.view(), stat2.view());
      },
      {"residual_layernorm_forward: bias"});
  expect_error_naming(
      [&] {
        op->residual_layernorm_forward(x.view(), vec.view(), residual.view(), 1.0f, 1, 0, vec.view(),
                                       vec2.view(), 1e-5f, sum.view(), out.view(), loom::Tensor{},
                                       stat.view(), stat2.view());
      },
      {"residual_layernorm_forward", "drop probability"});
  expect_error_naming(
      [&] {
        op->residual_layernorm_backward(x.view(), sum.view(), vec.view(), stat.view(), stat2.view(), 0.1f, 1,
                                        0, residual.view(), d_branch.view(), vec.view(), vec2.view(),
                                        short_vec.view());
      },
      {"residual_layernorm_backward", "dbias"});
  EXPECT_THROW(
      op->residual_layernorm_backward(d.view(), sum.view(), vec.view(), stat.view(), stat2.view(), 0.1f, 1, 0,
                                      d.view(), d.view(), vec.view(), vec2.view(), loom::Tensor{}),
      loom::Error)
      << "d_branch aliasing d_out";
}

}  // namespace
}  // namespace loom_backend_ops
