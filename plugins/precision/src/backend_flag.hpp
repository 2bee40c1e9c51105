// Reading the non-finite flag of the backend path (loom::BackendPrecision): one i32 in backend
// memory, copied to the host once — on a GPU the step's one synchronisation.
#pragma once

#include <cstdint>

#include "loom/sdk/backend.hpp"
#include "loom/sdk/error.hpp"

namespace loom_precision {

/// True when `flag` (i32 [1] on `backend`'s device) is nonzero; throws naming the view otherwise.
inline bool read_nonfinite_flag(loom::Backend& backend, const loom::Tensor& flag) {
  if (!flag.defined() || flag.dtype != loom::DType::i32 || flag.numel() != 1 ||
      flag.device != backend.device())
    throw loom::Error("after_backward_from_flag: the flag is " + flag.describe() +
                      ", expected i32[1] on the backend's device");
  int32_t value = 0;
  backend.copy_to_host(&value, flag.data, sizeof value);
  return value != 0;
}

}  // namespace loom_precision
