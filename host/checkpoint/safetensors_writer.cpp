// safetensors writing (contract in safetensors.hpp): tensors in insertion order, `__metadata__`
// first, header padded with spaces to a multiple of 8 bytes as the reference writer does, so every
// tensor of an 8-byte-aligned dtype starts aligned when the file is mapped.
#include <nlohmann/json.hpp>

#include "files/atomic_file.hpp"
#include "checkpoint/safetensors.hpp"

namespace loom::host {

void SafetensorsWriter::add(const std::string& name, SafetensorsDtype dtype, std::vector<std::int64_t> shape,
                            std::span<const std::byte> bytes) {
  if (name.empty() || name == "__metadata__")
    throw SafetensorsError("safetensors writer: invalid tensor name \"" + name + "\"");
  for (const Entry& entry : entries_)
    if (entry.name == name) throw SafetensorsError("safetensors writer: tensor \"" + name + "\" added twice");
  std::size_t expected = safetensors_dtype_size(dtype);
  for (std::int64_t extent : shape) {
    if (extent < 0)
      throw SafetensorsError("safetensors writer: tensor \"" + name + "\" has a negative extent");
    expected *= static_cast<std::size_t>(extent);
  }
  if (expected != bytes.size())
    throw SafetensorsError("safetensors writer: tensor \"" + name + "\" has " + std::to_string(bytes.size()) +
                           " bytes but its dtype and shape need " + std::to_string(expected));
  entries_.push_back({name, dtype, std::move(shape), std::vector<std::byte>(bytes.begin(), bytes.end())});
}

void SafetensorsWriter::add_f32(const std::string& name, std::vector<std::int64_t> shape,
                                std::span<const float> values) {
  add(name, SafetensorsDtype::kF32, std::move(shape), std::as_bytes(values));
}

void SafetensorsWriter::set_metadata(const std::string& key, const std::string& value) {
  metadata_[key] = value;
}

std::vector<std::byte> SafetensorsWriter::serialize() const {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata_.empty()) header["__metadata__"] = metadata_;
  std::uint64_t offset = 0;
  for (const Entry& entry : entries_) {
    const std::uint64_t end = offset + entry.bytes.size();
    header[entry.name] = {{"dtype", safetensors_dtype_name(entry.dtype)},
                          {"shape", entry.shape},
                          {"data_offsets", {offset, end}}};
    offset = end;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');

  std::vector<std::byte> image;
  image.reserve(8 + text.size() + offset);
  std::uint64_t length = text.size();
  for (int i = 0; i < 8; ++i) image.push_back(static_cast<std::byte>((length >> (8 * i)) & 0xff));
  for (char c : text) image.push_back(static_cast<std::byte>(c));
  for (const Entry& entry : entries_) image.insert(image.end(), entry.bytes.begin(), entry.bytes.end());
  return image;
}

void SafetensorsWriter::write(const std::filesystem::path& path) const {
  const std::vector<std::byte> image = serialize();
  write_file_atomically(path, image);
}

}  // namespace loom::host
