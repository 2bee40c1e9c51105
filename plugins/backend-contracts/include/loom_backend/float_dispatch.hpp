// Dispatch on a float dtype: both backends instantiate their kernels for the storage types of
// f32, bf16 and f16 (loom/sdk/float16.hpp) and compute in f32 whatever the storage.
#pragma once

#include <string>

#include "loom/sdk/error.hpp"
#include "loom/sdk/float16.hpp"
#include "loom/sdk/tensor.hpp"

namespace loom_backend {

/// Calls `body(S{})` with S = float, loom::BFloat16 or loom::Half matching `dtype` (other dtypes:
/// an error naming `op`).
template <typename Body>
void with_float_storage(loom::DType dtype, const char* op, Body&& body) {
  switch (dtype) {
    case loom::DType::f32:
      body(float{});
      return;
    case loom::DType::bf16:
      body(loom::BFloat16{});
      return;
    case loom::DType::f16:
      body(loom::Half{});
      return;
    default:
      throw loom::Error(std::string(op) + ": dtype " + loom::dtype_name(dtype) +
                        " is not supported (f32, bf16 or f16)");
  }
}

}  // namespace loom_backend
