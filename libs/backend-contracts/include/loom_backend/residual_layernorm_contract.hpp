// The argument contract of ResidualLayerNorm (loom/sdk/ops/residual_layernorm.hpp), checked the
// same way by every backend that offers it.
#pragma once

#include "loom_backend/op_contracts.hpp"

namespace loom_backend {

inline LayerNormRows check_residual_layernorm_forward(const ArgumentChecks& check, const loom::Tensor& y,
                                                      const loom::Tensor& bias, const loom::Tensor& residual,
                                                      float p, const loom::Tensor& gamma,
                                                      const loom::Tensor& beta, float eps,
                                                      const loom::Tensor& sum, const loom::Tensor& out,
                                                      const loom::Tensor& out_compute,
                                                      const loom::Tensor& mean, const loom::Tensor& rstd) {
  check.tensor("y", y, {DType::f32});
  check.tensor("residual", residual, {DType::f32});
  check.tensor("sum", sum, {DType::f32});
  check.tensor("out", out, {DType::f32});
  check.same_shape("y", y, "residual", residual);
  check.same_shape("y", y, "sum", sum);
  check.same_shape("y", y, "out", out);
  const int64_t cols = check.columns("y", y);
  check.require(cols > 0, "y has no columns");
  const LayerNormRows shape{y.numel() / cols, cols};
  if (check.optional("bias", bias, {DType::f32})) check.shape("bias", bias, {cols});
  if (check.optional("out_compute", out_compute, {DType::bf16, DType::f16}))
    check.same_shape("y", y, "out_compute", out_compute);
  check.tensor("gamma", gamma, {DType::f32});
  check.shape("gamma", gamma, {cols});
  check.tensor("beta", beta, {DType::f32});
  check.shape("beta", beta, {cols});
  detail::check_row_statistic(check, "mean", mean, shape.rows);
  detail::check_row_statistic(check, "rstd", rstd, shape.rows);
  check.require(out.data != y.data && out.data != residual.data && out.data != sum.data,
                "out may not alias y, residual or sum");
  check.require(eps > 0.0f, "eps must be positive");
  detail::check_drop_probability(check, p);
  return shape;
}

inline LayerNormRows check_residual_layernorm_backward(const ArgumentChecks& check, const loom::Tensor& d_out,
                                                       const loom::Tensor& sum, const loom::Tensor& gamma,
                                                       const loom::Tensor& mean, const loom::Tensor& rstd,
                                                       float p, const loom::Tensor& d_sum,
                                                       const loom::Tensor& d_branch,
                                                       const loom::Tensor& dgamma, const loom::Tensor& dbeta,
                                                       const loom::Tensor& dbias) {
  for (const auto* t : {&d_out, &sum, &d_sum, &d_branch}) {
    const char* name = t == &d_out ? "d_out" : t == &sum ? "sum" : t == &d_sum ? "d_sum" : "d_branch";
    check.tensor(name, *t, {DType::f32});
    check.same_shape("d_out", d_out, name, *t);
  }
  const int64_t cols = check.columns("d_out", d_out);
  check.require(cols > 0, "d_out has no columns");
  const LayerNormRows shape{d_out.numel() / cols, cols};
  for (const auto* t : {&gamma, &dgamma, &dbeta}) {
    const char* name = t == &gamma ? "gamma" : t == &dgamma ? "dgamma" : "dbeta";
    check.tensor(name, *t, {DType::f32});
    check.shape(name, *t, {cols});
  }
  if (check.optional("dbias", dbias, {DType::f32})) check.shape("dbias", dbias, {cols});
  detail::check_row_statistic(check, "mean", mean, shape.rows);
  detail::check_row_statistic(check, "rstd", rstd, shape.rows);
  check.require(d_branch.data != d_out.data && d_branch.data != d_sum.data && d_branch.data != sum.data,
                "d_branch may not alias d_out, d_sum or sum");
  check.require(d_sum.data != sum.data, "d_sum may not alias sum");
  detail::check_drop_probability(check, p);
  return shape;
}

/// ResidualLayerNormBackwardCopy (loom/sdk/ops/residual_layernorm_backward_copy.hpp): the backward's
/// arguments and the 16-bit copy of d_branch.
inline LayerNormRows check_residual_layernorm_backward_copy(
    const ArgumentChecks& check, const loom::Tensor& d_out, const loom::Tensor& sum, const loom::Tensor& gamma,
    const loom::Tensor& mean, const loom::Tensor& rstd, float p, const loom::Tensor& d_sum,
    const loom::Tensor& d_branch, const loom::Tensor& d_branch_compute, const loom::Tensor& dgamma,
    const loom::Tensor& dbeta, const loom::Tensor& dbias) {
  const LayerNormRows shape = check_residual_layernorm_backward(check, d_out, sum, gamma, mean, rstd, p, d_sum,
                                                                d_branch, dgamma, dbeta, dbias);
  check.tensor("d_branch_compute", d_branch_compute, {loom::DType::bf16, loom::DType::f16});
  check.same_shape("d_branch", d_branch, "d_branch_compute", d_branch_compute);
  for (const auto* t : {&d_out, &sum, &d_sum, &d_branch, &gamma, &mean, &rstd, &dgamma, &dbeta, &dbias})
    check.require(d_branch_compute.data != t->data,
                  "d_branch_compute may not alias d_out, sum, d_sum, d_branch or a row or column vector");
  return shape;
}

}  // namespace loom_backend
