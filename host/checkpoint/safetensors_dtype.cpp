// safetensors dtype names and element sizes (the reference implementation's full list).
#include <array>

#include "checkpoint/safetensors.hpp"

namespace loom::host {
namespace {

struct DtypeInfo {
  SafetensorsDtype dtype;
  std::string_view name;
  std::size_t size;
};

constexpr std::array<DtypeInfo, 15> kDtypes{{
    {SafetensorsDtype::kBool, "BOOL", 1},
    {SafetensorsDtype::kU8, "U8", 1},
    {SafetensorsDtype::kI8, "I8", 1},
    {SafetensorsDtype::kF8E5M2, "F8_E5M2", 1},
    {SafetensorsDtype::kF8E4M3, "F8_E4M3", 1},
    {SafetensorsDtype::kI16, "I16", 2},
    {SafetensorsDtype::kU16, "U16", 2},
    {SafetensorsDtype::kF16, "F16", 2},
    {SafetensorsDtype::kBF16, "BF16", 2},
    {SafetensorsDtype::kI32, "I32", 4},
    {SafetensorsDtype::kU32, "U32", 4},
    {SafetensorsDtype::kF32, "F32", 4},
    {SafetensorsDtype::kF64, "F64", 8},
    {SafetensorsDtype::kI64, "I64", 8},
    {SafetensorsDtype::kU64, "U64", 8},
}};

const DtypeInfo& info(SafetensorsDtype dtype) {
  for (const auto& entry : kDtypes)
    if (entry.dtype == dtype) return entry;
  throw SafetensorsError("invalid SafetensorsDtype value " + std::to_string(static_cast<int>(dtype)));
}

}  // namespace

std::string_view safetensors_dtype_name(SafetensorsDtype dtype) {
  return info(dtype).name;
}

std::size_t safetensors_dtype_size(SafetensorsDtype dtype) {
  return info(dtype).size;
}

bool parse_safetensors_dtype(std::string_view name, SafetensorsDtype& dtype) {
  for (const auto& entry : kDtypes) {
    if (entry.name == name) {
      dtype = entry.dtype;
      return true;
    }
  }
  return false;
}

std::int64_t SafetensorsTensor::element_count() const {
  std::int64_t count = 1;
  for (std::int64_t extent : shape) count *= extent;
  return count;
}

}  // namespace loom::host
