// Dispatch on a float dtype: both backends instantiate their kernels for the storage types of
// f32, bf16 and f16 (loom/sdk/float16.hpp) and compute in f32 whatever the storage. An op with
// several float views dispatches on each of their dtypes (with_float_storages); each backend's op
// preamble (run_op) does that after the op's contract.
#pragma once

#include <cstddef>
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

namespace detail {
/// with_float_storages from dtypes[I] on, the storage types of the earlier ones chosen.
template <size_t I, size_t N, typename Body, typename... Chosen>
void with_float_storages_from(const loom::DType (&dtypes)[N], const char* op, Body& body, Chosen... chosen) {
  if constexpr (I == N) {
    body(chosen...);
  } else {
    with_float_storage(dtypes[I], op,
                       [&](auto s) { with_float_storages_from<I + 1>(dtypes, op, body, chosen..., s); });
  }
}
}  // namespace detail

/// Calls `body(S0{}, S1{}, ...)` with S_i the storage type of dtypes[i]: nested with_float_storage
/// calls, outermost first, so the first dtype that is not a float storage is the one an error names.
template <size_t N, typename Body>
void with_float_storages(const loom::DType (&dtypes)[N], const char* op, Body&& body) {
  detail::with_float_storages_from<0>(dtypes, op, body);
}

}  // namespace loom_backend
