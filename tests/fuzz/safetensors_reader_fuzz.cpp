// libFuzzer target for the safetensors reader: any byte string is either refused with
// SafetensorsError or yields tensors that (a) lie inside the buffer and exactly tile the data
// region, (b) are found by name, (c) convert to float when they are float, and (d) survive a
// write/read round trip unchanged. Any other exception, crash or sanitizer report is a bug.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <span>

#include "checkpoint/safetensors.hpp"

using loom::host::SafetensorsDtype;
using loom::host::SafetensorsError;
using loom::host::SafetensorsFile;
using loom::host::SafetensorsWriter;

namespace {

void require(bool condition) {
  if (!condition) std::abort();
}

bool is_float(SafetensorsDtype dtype) {
  return dtype == SafetensorsDtype::kF32 || dtype == SafetensorsDtype::kF16 ||
         dtype == SafetensorsDtype::kBF16 || dtype == SafetensorsDtype::kF64;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto bytes = std::as_bytes(std::span(data, size));
  std::optional<SafetensorsFile> file;
  try {
    file.emplace(SafetensorsFile::from_bytes(bytes, "fuzz"));
  } catch (const SafetensorsError&) {
    return 0;
  }
  std::uint64_t header = 0;
  std::memcpy(&header, data, 8);
  std::size_t covered = 0;
  SafetensorsWriter writer;
  for (const auto& tensor : file->tensors()) {
    require(file->find(tensor.name) == &tensor);
    require(tensor.byte_size == loom::host::safetensors_dtype_size(tensor.dtype) * tensor.element_count());
    require(tensor.byte_size == 0 || tensor.data != nullptr);
    covered += tensor.byte_size;
    if (is_float(tensor.dtype))
      require(file->read_f32(tensor.name).size() == static_cast<std::size_t>(tensor.element_count()));
    writer.add(tensor.name, tensor.dtype, tensor.shape, std::span(tensor.data, tensor.byte_size));
  }
  require(covered == size - 8 - header);
  for (const auto& [key, value] : file->metadata()) writer.set_metadata(key, value);
  const auto again = SafetensorsFile::from_bytes(writer.serialize(), "fuzz round trip");
  require(again.tensors().size() == file->tensors().size());
  require(again.metadata() == file->metadata());
  for (const auto& tensor : file->tensors()) {
    const auto& copy = again.tensor(tensor.name);
    require(copy.dtype == tensor.dtype && copy.shape == tensor.shape && copy.byte_size == tensor.byte_size);
    require(tensor.byte_size == 0 || std::memcmp(copy.data, tensor.data, tensor.byte_size) == 0);
  }
  return 0;
}
