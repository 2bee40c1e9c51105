// SafetensorsFile::read_f32: float tensors of any width copied out as float32 (loading fp16/bf16
// Hugging Face checkpoints into Loom's fp32 master weights, comparing gradients in tests).
#include <cstring>

#include "checkpoint/safetensors.hpp"

namespace loom::host {
namespace {

float float_from_bits(std::uint32_t bits) {
  float value;
  std::memcpy(&value, &bits, sizeof value);
  return value;
}

// IEEE binary16 → binary32, exact for every input (subnormals, infinities, NaN payloads).
float half_to_float(std::uint16_t half) {
  const std::uint32_t sign = static_cast<std::uint32_t>(half & 0x8000u) << 16;
  const std::uint32_t exponent = (half >> 10) & 0x1fu;
  std::uint32_t mantissa = half & 0x3ffu;
  if (exponent == 0x1f) return float_from_bits(sign | 0x7f800000u | (mantissa << 13));
  if (exponent != 0) return float_from_bits(sign | ((exponent + 112) << 23) | (mantissa << 13));
  if (mantissa == 0) return float_from_bits(sign);
  // Subnormal half: value = mantissa × 2^-24, normalised for float.
  int shift = 0;
  while ((mantissa & 0x400u) == 0) {
    mantissa <<= 1;
    ++shift;
  }
  return float_from_bits(sign | static_cast<std::uint32_t>(113 - shift) << 23 | ((mantissa & 0x3ffu) << 13));
}

template <typename T>
T load(const std::byte* at) {
  T value;
  std::memcpy(&value, at, sizeof value);
  return value;
}

}  // namespace

std::vector<float> SafetensorsFile::read_f32(std::string_view name) const {
  const SafetensorsTensor& source = tensor(name);
  const std::size_t count = static_cast<std::size_t>(source.element_count());
  std::vector<float> values(count);
  if (count == 0) return values;  // (memcpy from/to the null data of empty vectors is undefined)
  switch (source.dtype) {
    case SafetensorsDtype::kF32:
      std::memcpy(values.data(), source.data, count * sizeof(float));
      break;
    case SafetensorsDtype::kF64:
      for (std::size_t i = 0; i < count; ++i)
        values[i] = static_cast<float>(load<double>(source.data + 8 * i));
      break;
    case SafetensorsDtype::kF16:
      for (std::size_t i = 0; i < count; ++i)
        values[i] = half_to_float(load<std::uint16_t>(source.data + 2 * i));
      break;
    case SafetensorsDtype::kBF16:
      for (std::size_t i = 0; i < count; ++i)
        values[i] =
            float_from_bits(static_cast<std::uint32_t>(load<std::uint16_t>(source.data + 2 * i)) << 16);
      break;
    default:
      throw SafetensorsError(source_ + ": tensor \"" + std::string(name) + "\" has dtype " +
                             std::string(safetensors_dtype_name(source.dtype)) +
                             ", expected a floating-point one (F32, F16, BF16, F64)");
  }
  return values;
}

}  // namespace loom::host
