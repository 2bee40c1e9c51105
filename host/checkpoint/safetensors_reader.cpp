// safetensors reading: map the file, validate the whole header before exposing any view
// (contract in safetensors.hpp; the rules mirror the format's reference implementation, which
// refuses overlaps, gaps and trailing bytes, not only out-of-bounds offsets).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "checkpoint/safetensors.hpp"

namespace loom::host {
namespace {

// The reference implementation's limit; a larger header is refused before parsing it.
constexpr std::uint64_t kMaxHeaderBytes = 100'000'000;
// Byte counts above this saturate while multiplying a shape (no file is that large).
constexpr unsigned __int128 kHugeBytes = std::numeric_limits<std::uint64_t>::max();

[[noreturn]] void refuse(const std::string& source, const std::string& problem) {
  throw SafetensorsError(source + ": not a valid safetensors file: " + problem);
}

std::uint64_t read_le_u64(const std::byte* bytes) {
  std::uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | std::to_integer<std::uint64_t>(bytes[i]);
  return value;
}

// JSON integers arrive as number_unsigned when non-negative; anything else is refused by caller.
bool as_non_negative_integer(const nlohmann::json& value, std::uint64_t& out) {
  if (!value.is_number_unsigned()) return false;
  out = value.get<std::uint64_t>();
  return true;
}

std::string json_excerpt(const nlohmann::json& value) {
  std::string text = value.dump();
  return text.size() > 60 ? text.substr(0, 57) + "..." : text;
}

// Parses the header JSON, refusing duplicate keys in any object (nlohmann would silently keep the
// last one, which would make two readers of one file disagree).
nlohmann::json parse_header_json(std::string_view text, const std::string& source) {
  std::vector<std::set<std::string>> open_objects;
  std::string duplicate;
  auto on_event = [&](int /*depth*/, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using Event = nlohmann::json::parse_event_t;
    if (event == Event::object_start) {
      open_objects.emplace_back();
    } else if (event == Event::object_end) {
      if (!open_objects.empty()) open_objects.pop_back();
    } else if (event == Event::key && !open_objects.empty() && parsed.is_string()) {
      if (!open_objects.back().insert(parsed.get<std::string>()).second && duplicate.empty())
        duplicate = parsed.get<std::string>();
    }
    return true;
  };
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text.begin(), text.end(), on_event);
  } catch (const nlohmann::json::exception& error) {
    refuse(source, std::string("header is not well-formed JSON (") + error.what() + ")");
  }
  if (!duplicate.empty()) refuse(source, "header has the key \"" + duplicate + "\" more than once");
  return header;
}

}  // namespace

// Owns the bytes: either a private read-only mapping of the file or a heap copy.
struct SafetensorsFile::Storage {
  const std::byte* bytes = nullptr;
  std::size_t size = 0;
  void* mapping = nullptr;
  std::vector<std::byte> copy;

  ~Storage() {
    if (mapping != nullptr) ::munmap(mapping, size);
  }
};

SafetensorsFile::SafetensorsFile(std::unique_ptr<Storage> storage, std::string source)
    : storage_(std::move(storage)), source_(std::move(source)) {
  parse();
}

SafetensorsFile::SafetensorsFile(SafetensorsFile&&) noexcept = default;
SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&&) noexcept = default;
SafetensorsFile::~SafetensorsFile() = default;

SafetensorsFile SafetensorsFile::open(const std::filesystem::path& path) {
  const std::string source = path.string();
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw SafetensorsError(source + ": cannot open: " + std::strerror(errno));
  struct stat status {};
  if (::fstat(fd, &status) != 0 || !S_ISREG(status.st_mode)) {
    int error = errno;
    ::close(fd);
    throw SafetensorsError(source + ": not a regular file" +
                           (error ? std::string(": ") + std::strerror(error) : ""));
  }
  auto storage = std::make_unique<Storage>();
  storage->size = static_cast<std::size_t>(status.st_size);
  if (storage->size > 0) {
    void* mapping = ::mmap(nullptr, storage->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (mapping == MAP_FAILED) {
      int error = errno;
      ::close(fd);
      throw SafetensorsError(source + ": cannot memory-map: " + std::strerror(error));
    }
    storage->mapping = mapping;
    storage->bytes = static_cast<const std::byte*>(mapping);
  }
  ::close(fd);  // the mapping stays valid without the descriptor
  return SafetensorsFile(std::move(storage), source);
}

SafetensorsFile SafetensorsFile::from_bytes(std::span<const std::byte> bytes, const std::string& source) {
  auto storage = std::make_unique<Storage>();
  storage->copy.assign(bytes.begin(), bytes.end());
  storage->bytes = storage->copy.data();
  storage->size = storage->copy.size();
  return SafetensorsFile(std::move(storage), source);
}

void SafetensorsFile::parse() {
  const std::size_t file_size = storage_->size;
  if (file_size < 8)
    refuse(source_, "file is " + std::to_string(file_size) + " bytes, shorter than the 8-byte header length");
  const std::uint64_t header_size = read_le_u64(storage_->bytes);
  if (header_size > kMaxHeaderBytes)
    refuse(source_, "header length " + std::to_string(header_size) + " exceeds the limit of " +
                        std::to_string(kMaxHeaderBytes) + " bytes (truncated or not a safetensors file?)");
  if (header_size > file_size - 8)
    refuse(source_, "header length " + std::to_string(header_size) + " runs past the end of the file (" +
                        std::to_string(file_size) + " bytes; truncated?)");
  if (header_size < 2)
    refuse(source_, "header length " + std::to_string(header_size) + " is too small for a JSON object");
  const char* header_text = reinterpret_cast<const char*>(storage_->bytes + 8);
  if (header_text[0] != '{') refuse(source_, "header does not start with '{'");
  const nlohmann::json header = parse_header_json(std::string_view(header_text, header_size), source_);
  if (!header.is_object()) refuse(source_, "header is not a JSON object");

  const std::byte* data = storage_->bytes + 8 + header_size;
  const std::uint64_t data_size = file_size - 8 - header_size;
  struct Span {
    std::uint64_t begin, end;
    std::size_t tensor;
  };
  std::vector<Span> spans;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) refuse(source_, "__metadata__ is not a JSON object of strings");
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) refuse(source_, "__metadata__ value of \"" + key + "\" is not a string");
        metadata_[key] = value.get<std::string>();
      }
      continue;
    }
    const std::string where = "tensor \"" + name + "\": ";
    if (!entry.is_object()) refuse(source_, where + "entry is not a JSON object");
    for (const auto& [key, value] : entry.items()) {
      (void)value;
      if (key != "dtype" && key != "shape" && key != "data_offsets")
        refuse(source_, where + "unknown field \"" + key + "\"");
    }
    if (!entry.contains("dtype") || !entry.contains("shape") || !entry.contains("data_offsets"))
      refuse(source_, where + "entry needs \"dtype\", \"shape\" and \"data_offsets\"");
    SafetensorsTensor tensor;
    tensor.name = name;
    const auto& dtype = entry["dtype"];
    if (!dtype.is_string() || !parse_safetensors_dtype(dtype.get<std::string>(), tensor.dtype))
      refuse(source_, where + "unknown dtype " + json_excerpt(dtype));
    const auto& shape = entry["shape"];
    if (!shape.is_array()) refuse(source_, where + "shape is not an array");
    // The byte length is computed in 128 bits so a hostile shape cannot wrap around.
    unsigned __int128 expected_bytes = safetensors_dtype_size(tensor.dtype);
    for (const auto& extent : shape) {
      std::uint64_t value = 0;
      if (!as_non_negative_integer(extent, value) ||
          value > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        refuse(source_, where + "shape entry " + json_excerpt(extent) + " is not a non-negative integer");
      tensor.shape.push_back(static_cast<std::int64_t>(value));
      expected_bytes *= value;
      if (expected_bytes > kHugeBytes) expected_bytes = kHugeBytes + 1;
    }
    const auto& offsets = entry["data_offsets"];
    std::uint64_t begin = 0, end = 0;
    if (!offsets.is_array() || offsets.size() != 2 || !as_non_negative_integer(offsets[0], begin) ||
        !as_non_negative_integer(offsets[1], end))
      refuse(source_, where + "data_offsets " + json_excerpt(offsets) +
                          " is not [begin, end] of non-negative integers");
    if (begin > end)
      refuse(source_,
             where + "data_offsets begin " + std::to_string(begin) + " > end " + std::to_string(end));
    if (end > data_size)
      refuse(source_, where + "data_offsets end " + std::to_string(end) + " is beyond the data region of " +
                          std::to_string(data_size) + " bytes (truncated?)");
    if (expected_bytes != end - begin) {
      const std::string needed = expected_bytes > kHugeBytes
                                     ? std::string("more than 2^64 bytes")
                                     : std::to_string(static_cast<std::uint64_t>(expected_bytes)) + " bytes";
      refuse(source_, where + "dtype " + std::string(safetensors_dtype_name(tensor.dtype)) + " with shape " +
                          json_excerpt(shape) + " needs " + needed + " but data_offsets span " +
                          std::to_string(end - begin));
    }
    tensor.data = data + begin;
    tensor.byte_size = static_cast<std::size_t>(end - begin);
    spans.push_back({begin, end, tensors_.size()});
    tensors_.push_back(std::move(tensor));
  }

  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  std::uint64_t covered = 0;
  const std::string* previous = nullptr;
  for (const Span& span : spans) {
    const std::string& name = tensors_[span.tensor].name;
    if (span.begin < covered)
      refuse(source_, "tensor \"" + name + "\" [" + std::to_string(span.begin) + ", " +
                          std::to_string(span.end) + ") overlaps tensor \"" + *previous + "\" (ends at " +
                          std::to_string(covered) + ")");
    if (span.begin > covered)
      refuse(source_, "gap of " + std::to_string(span.begin - covered) + " unused bytes before tensor \"" +
                          name + "\" at data offset " + std::to_string(covered));
    covered = span.end;
    previous = &name;
  }
  if (covered != data_size)
    refuse(source_, std::to_string(data_size - covered) +
                        " trailing bytes after the last tensor (data region is " + std::to_string(data_size) +
                        " bytes, tensors cover " + std::to_string(covered) + ")");

  // Present tensors in file order; the index maps names to that order.
  std::vector<SafetensorsTensor> ordered;
  ordered.reserve(tensors_.size());
  for (const Span& span : spans) ordered.push_back(std::move(tensors_[span.tensor]));
  tensors_ = std::move(ordered);
  for (std::size_t i = 0; i < tensors_.size(); ++i) index_.emplace(tensors_[i].name, i);
}

const SafetensorsTensor* SafetensorsFile::find(std::string_view name) const {
  auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

const SafetensorsTensor& SafetensorsFile::tensor(std::string_view name) const {
  const SafetensorsTensor* found = find(name);
  if (found == nullptr) throw SafetensorsError(source_ + ": has no tensor \"" + std::string(name) + "\"");
  return *found;
}

}  // namespace loom::host
