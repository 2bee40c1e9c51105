// The sequence every op of backend/cpu begins with, written once: argument checks for the op
// (timing it while profiling, until the op returns), the op's contract from backend-contracts —
// which returns the geometry the op needs — and the dispatch from the dtypes of its float views
// to the storage types its generic body is instantiated for:
//
//   run_op(
//       "softmax_backward",
//       [&](const ArgumentChecks& check) { return check_softmax_backward(check, dprobs, probs, dscores); },
//       {probs.dtype},
//       [&](const SoftmaxRows& shape, auto probs_storage) { ... });
//
// The contract lambda is also where a check only backend/cpu makes goes (it reads targets where
// they live), so the body starts from arguments that are known good.
#pragma once

#include "cpu_backend.hpp"
#include "loom_backend/float_dispatch.hpp"
#include "loom_backend/op_contracts.hpp"

namespace loom_cpu {

/// Softmax over rows of no columns has nothing to compute, and its contract did not look at the
/// key mask then, so the body must not run.
inline bool nothing_to_compute(const loom_backend::SoftmaxRows& shape) {
  return shape.empty();
}
/// Every other geometry runs its body, which loops over no rows when there are none.
template <typename Geometry>
bool nothing_to_compute(const Geometry&) {
  return false;
}

template <typename Contract, size_t N, typename Body>
void CpuBackend::run_op(const char* op, Contract&& contract, const DType (&storage)[N], Body&& body) const {
  const auto check = checks(op);
  const auto geometry = contract(static_cast<const ArgumentChecks&>(check));
  if (nothing_to_compute(geometry)) return;
  loom_backend::with_float_storages(storage, op,
                                    [&](auto... storage_types) { body(geometry, storage_types...); });
}

template <typename Contract, typename Body>
void CpuBackend::run_op(const char* op, Contract&& contract, Body&& body) const {
  const auto check = checks(op);
  const auto geometry = contract(static_cast<const ArgumentChecks&>(check));
  if (nothing_to_compute(geometry)) return;
  body(geometry);
}

}  // namespace loom_cpu
