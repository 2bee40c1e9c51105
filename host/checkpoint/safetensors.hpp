// safetensors: the tensor file format of Hugging Face checkpoints (docs/checkpoints.md).
//
// Layout: an 8-byte little-endian header length N, N bytes of UTF-8 JSON
// `{"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, ..., "__metadata__": {..}}`,
// then the raw little-endian tensor bytes; offsets are relative to the start of that data region.
//
// Reading (`SafetensorsFile`) memory-maps the file once and validates everything before any view is
// handed out: header length vs file size (and a 100 MB header cap), well-formed JSON object, no
// duplicate names, known dtype, shape × dtype size = byte length, offsets in bounds, and tensors that
// cover the data region contiguously (no overlap, no gap, no trailing bytes), as the format's
// reference implementation requires. A malformed file throws SafetensorsError naming the file and
// the problem. Writing (`SafetensorsWriter`) is atomic: temporary file, fsync, rename.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace loom::host {

/// A safetensors file (or a buffer) is malformed, or a requested tensor is absent or of the
/// wrong kind. The message names the file and the problem.
class SafetensorsError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Element types of the format (every dtype of the reference implementation).
enum class SafetensorsDtype {
  kBool,
  kU8,
  kI8,
  kF8E5M2,
  kF8E4M3,
  kI16,
  kU16,
  kF16,
  kBF16,
  kI32,
  kU32,
  kF32,
  kF64,
  kI64,
  kU64,
};

/// The header spelling of a dtype ("F32", "BF16", ...).
std::string_view safetensors_dtype_name(SafetensorsDtype dtype);
/// Bytes per element.
std::size_t safetensors_dtype_size(SafetensorsDtype dtype);
/// Parses a header spelling; false if unknown.
bool parse_safetensors_dtype(std::string_view name, SafetensorsDtype& dtype);

/// One tensor of an open file: a read-only view into the mapped data (not necessarily aligned
/// for the element type: copy out with memcpy or `SafetensorsFile::read_f32`).
struct SafetensorsTensor {
  std::string name;
  SafetensorsDtype dtype = SafetensorsDtype::kF32;
  std::vector<std::int64_t> shape;  ///< empty = scalar (one element)
  const std::byte* data = nullptr;
  std::size_t byte_size = 0;

  /// Product of the shape (1 for a scalar).
  std::int64_t element_count() const;
};

/// A validated, read-only safetensors file (memory-mapped) or buffer (owned copy).
class SafetensorsFile {
 public:
  /// Maps and validates `path`; throws SafetensorsError ("<path>: <problem>").
  static SafetensorsFile open(const std::filesystem::path& path);
  /// Validates an in-memory image (copied); `source` names it in errors.
  static SafetensorsFile from_bytes(std::span<const std::byte> bytes, const std::string& source);

  SafetensorsFile(SafetensorsFile&&) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&&) noexcept;
  ~SafetensorsFile();

  /// The file name (or buffer source) used in messages.
  const std::string& source() const { return source_; }
  /// All tensors, ordered by their position in the data region.
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
  /// The tensor called `name`, or nullptr.
  const SafetensorsTensor* find(std::string_view name) const;
  /// The tensor called `name`; throws SafetensorsError naming the file if absent.
  const SafetensorsTensor& tensor(std::string_view name) const;
  /// The optional `__metadata__` string map.
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  /// Copies a F32/F16/BF16/F64 tensor out as float values; throws for other dtypes.
  std::vector<float> read_f32(std::string_view name) const;

 private:
  struct Storage;
  SafetensorsFile(std::unique_ptr<Storage> storage, std::string source);
  void parse();

  std::unique_ptr<Storage> storage_;
  std::string source_;
  std::vector<SafetensorsTensor> tensors_;
  std::map<std::string, std::size_t, std::less<>> index_;
  std::map<std::string, std::string> metadata_;
};

/// Collects tensors and writes one safetensors file. Data is copied when added.
class SafetensorsWriter {
 public:
  /// Adds raw little-endian bytes; byte length must equal shape × dtype size. Throws
  /// SafetensorsError for a duplicate or empty name, "__metadata__", or a size mismatch.
  void add(const std::string& name, SafetensorsDtype dtype, std::vector<std::int64_t> shape,
           std::span<const std::byte> bytes);
  /// Adds float32 values.
  void add_f32(const std::string& name, std::vector<std::int64_t> shape, std::span<const float> values);
  /// Sets one `__metadata__` entry (Hugging Face loaders expect {"format": "pt"}).
  void set_metadata(const std::string& key, const std::string& value);
  /// The complete file image (header padded with spaces to a multiple of 8 so data is aligned).
  std::vector<std::byte> serialize() const;
  /// Writes the image to `path` atomically (temporary file in the same directory, fsync, rename).
  void write(const std::filesystem::path& path) const;

 private:
  struct Entry {
    std::string name;
    SafetensorsDtype dtype;
    std::vector<std::int64_t> shape;
    std::vector<std::byte> bytes;
  };
  std::vector<Entry> entries_;
  std::map<std::string, std::string> metadata_;
};

}  // namespace loom::host
