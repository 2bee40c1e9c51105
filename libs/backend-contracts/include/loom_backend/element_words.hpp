// Elements moved as unsigned words of their dtype's size, so that fill and copy are exact for
// every dtype without a case per dtype in the kernels. Host code, shared by backend/cpu and
// backend/cuda so that a fill writes the same bits on both.
#pragma once

#include <cstdint>
#include <cstring>

#include "loom/sdk/float16.hpp"
#include "loom/sdk/tensor.hpp"

namespace loom_backend {

/// The bit pattern of `value` in `dtype`, in an unsigned word of the dtype's size.
template <typename Word>
Word bits_of(double value, loom::DType dtype) {
  unsigned char bytes[8] = {};
  const auto put = [&](auto v) { std::memcpy(bytes, &v, sizeof v); };
  switch (dtype) {
    case loom::DType::f32:
      put(static_cast<float>(value));
      break;
    case loom::DType::bf16:
      put(loom::f32_to_bf16_bits(static_cast<float>(value)));
      break;
    case loom::DType::f16:
      put(loom::f32_to_f16_bits(static_cast<float>(value)));
      break;
    case loom::DType::i32:
      put(static_cast<int32_t>(value));
      break;
    case loom::DType::i64:
      put(static_cast<int64_t>(value));
      break;
    case loom::DType::i8:
      put(static_cast<int8_t>(value));
      break;
    case loom::DType::u8:
      put(static_cast<uint8_t>(value));
      break;
  }
  Word word;
  std::memcpy(&word, bytes, sizeof word);
  return word;
}

/// Calls body(Word{}) with an unsigned integer type of the dtype's size.
template <typename Body>
void with_word(loom::DType dtype, Body&& body) {
  switch (loom::dtype_size(dtype)) {
    case 1:
      body(uint8_t{});
      return;
    case 2:
      body(uint16_t{});
      return;
    case 4:
      body(uint32_t{});
      return;
    default:
      body(uint64_t{});
      return;
  }
}

}  // namespace loom_backend
