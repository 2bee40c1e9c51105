// The sequence every op of backend/cuda begins and ends with, written once: argument checks for
// the op (binding the device, and timing the op while profiling, until it returns), the op's
// contract from backend-contracts — which returns the geometry the op needs; backend/cuda's own
// limits go in the same lambda — the dispatch from the dtypes of its float views to the storage
// types its generic body (the launches) is instantiated for, and the launch check:
//
//   run_op(
//       "softmax_backward",
//       [&](const ArgumentChecks& check) { return check_softmax_backward(check, dprobs, probs, dscores); },
//       {probs.dtype},
//       [&](const SoftmaxRows& shape, auto probs_storage) { kernel<<<...>>>(...); });
#pragma once

#include "attention_shape.hpp"
#include "cuda_backend.hpp"
#include "cuda_check.hpp"
#include "loom_backend/attention_contract.hpp"
#include "loom_backend/float_dispatch.hpp"
#include "loom_backend/op_contracts.hpp"

namespace loom_cuda {

/// The geometry of an element-wise op: how many elements its views hold.
struct Elements {
  int64_t count;
};
/// The geometry of an element-wise op over rows (bias + GELU): its elements, in rows of `cols`.
struct ElementRows {
  int64_t count, cols;
};

// A grid of no blocks is not a valid launch, so an op with nothing to work on returns after its
// contract, launching and checking nothing.
/// An element-wise op over no elements.
inline bool nothing_to_launch(const Elements& elements) {
  return elements.count == 0;
}
inline bool nothing_to_launch(const ElementRows& elements) {
  return elements.count == 0;
}
/// bias_add and bias_grad over no rows or rows of no columns.
inline bool nothing_to_launch(const loom_backend::BiasRows& shape) {
  return shape.rows == 0 || shape.cols == 0;
}
/// A gather of no ids or of rows of no columns (the ids were checked with the contract).
inline bool nothing_to_launch(const loom_backend::EmbeddingRows& shape) {
  return shape.ids * shape.cols == 0;
}
/// Attention over no (batch, head, query) rows.
inline bool nothing_to_launch(const AttentionShape& shape) {
  return shape.batch * shape.heads * shape.seq == 0;
}
/// Head rows of no elements (rotary_apply: no rows, or rows of no pairs).
inline bool nothing_to_launch(const loom_backend::AttentionDims& n) {
  return n.batch * n.heads * n.seq * n.head_dim == 0;
}
/// Softmax over no rows or rows of no columns (whose key mask the contract did not look at).
inline bool nothing_to_launch(const loom_backend::SoftmaxRows& shape) {
  return shape.empty();
}
/// LayerNorm (plain or fused with the residual) over no rows.
inline bool nothing_to_launch(const loom_backend::LayerNormRows& shape) {
  return shape.rows == 0;
}
/// Every other geometry runs its body (cross-entropy writes a mean loss of 0 for no rows), unless
/// the op's own geometry type has an overload beside it (found by argument-dependent lookup).
template <typename Geometry>
bool nothing_to_launch(const Geometry&) {
  return false;
}

template <typename Contract, size_t N, typename Body>
void CudaBackend::run_op(const char* op, Contract&& contract, const DType (&storage)[N], Body&& body) const {
  const auto check = checks(op);
  const auto geometry = contract(static_cast<const ArgumentChecks&>(check));
  if (nothing_to_launch(geometry)) return;
  loom_backend::with_float_storages(storage, op,
                                    [&](auto... storage_types) { body(geometry, storage_types...); });
  check_launch(op);
}

template <typename Contract, typename Body>
void CudaBackend::run_op(const char* op, Contract&& contract, Body&& body) const {
  const auto check = checks(op);
  const auto geometry = contract(static_cast<const ArgumentChecks&>(check));
  if (nothing_to_launch(geometry)) return;
  body(geometry);
  check_launch(op);
}

}  // namespace loom_cuda
