// HDF5 shard writer; see pretraining_shard_writer.hpp.
#include "prep/pretraining_shard_writer.hpp"

#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "files/file_writer.hpp"

namespace loom::host {
namespace {

constexpr hsize_t kChunkRows = 1024;
constexpr hsize_t kBlockRows = 4096;

// Owns one HDF5 identifier and closes it with the matching H5?close.
class Handle {
 public:
  Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() {
    if (id_ >= 0) close_(id_);
  }
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }
  /// Gives up ownership, so the caller can close it and check the result.
  hid_t release() {
    const hid_t id = id_;
    id_ = -1;
    return id;
  }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

struct Column {
  const char* key;
  hid_t file_type;  // little-endian, as h5py writes numpy's native types
  hid_t memory_type;
  hsize_t width;  // 0 for [N]
};

[[noreturn]] void fail(const std::filesystem::path& path, const std::string& key, const std::string& what) {
  throw std::runtime_error(path.string() + ": HDF5 " + what + (key.empty() ? "" : " for key '" + key + "'"));
}

// Fills rows [first, first+count) of one column into `block` (int32 or int8 per `column`).
void fill_block(const Column& column, const std::vector<PretrainingInstance>& instances, hsize_t first,
                hsize_t count, std::vector<int32_t>& ints, std::vector<int8_t>& bytes) {
  const std::string key = column.key;
  const size_t width = std::max<hsize_t>(column.width, 1);
  ints.assign(count * width, 0);
  bytes.assign(count * width, 0);
  for (hsize_t r = 0; r < count; ++r) {
    const PretrainingInstance& instance = instances[first + r];
    int32_t* row = ints.data() + r * width;
    int8_t* byte_row = bytes.data() + r * width;
    if (key == "input_ids") {
      std::copy(instance.tokens.begin(), instance.tokens.end(), row);
    } else if (key == "input_mask") {
      std::fill(byte_row, byte_row + instance.tokens.size(), int8_t{1});
    } else if (key == "segment_ids") {
      std::copy(instance.segment_ids.begin(), instance.segment_ids.end(), byte_row);
    } else if (key == "masked_lm_positions") {
      std::copy(instance.masked_positions.begin(), instance.masked_positions.end(), row);
    } else if (key == "masked_lm_ids") {
      std::copy(instance.masked_ids.begin(), instance.masked_ids.end(), row);
    } else {
      byte_row[0] = instance.is_random_next ? 1 : 0;
    }
  }
}

void write_column(hid_t file, const std::filesystem::path& path, const Column& column,
                  const std::vector<PretrainingInstance>& instances) {
  const hsize_t rows = instances.size();
  const int rank = column.width == 0 ? 1 : 2;
  const hsize_t dims[2] = {rows, column.width};
  Handle space(H5Screate_simple(rank, dims, nullptr), H5Sclose);
  Handle properties(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  if (!space.ok() || !properties.ok()) fail(path, column.key, "cannot create dataspace");
  // No access/modification times in the object headers: a shard is a function of its inputs and
  // seed alone, byte for byte, so that the manifest's sha256 repeats from run to run (the times
  // made two runs a second apart differ in six bytes per file).
  if (H5Pset_obj_track_times(properties.get(), false) < 0) fail(path, column.key, "cannot turn off times");
  if (rows > 0) {
    const hsize_t chunk[2] = {std::min(rows, kChunkRows), column.width};
    if (H5Pset_chunk(properties.get(), rank, chunk) < 0 || H5Pset_deflate(properties.get(), 4) < 0)
      fail(path, column.key, "cannot set chunking/gzip");
  }
  Handle dataset(
      H5Dcreate2(file, column.key, column.file_type, space.get(), H5P_DEFAULT, properties.get(), H5P_DEFAULT),
      H5Dclose);
  if (!dataset.ok()) fail(path, column.key, "cannot create dataset");
  std::vector<int32_t> ints;
  std::vector<int8_t> bytes;
  for (hsize_t first = 0; first < rows; first += kBlockRows) {
    const hsize_t count = std::min(kBlockRows, rows - first);
    fill_block(column, instances, first, count, ints, bytes);
    const hsize_t start[2] = {first, 0};
    const hsize_t extent[2] = {count, column.width};
    Handle memory(H5Screate_simple(rank, extent, nullptr), H5Sclose);
    Handle selection(H5Dget_space(dataset.get()), H5Sclose);
    if (H5Sselect_hyperslab(selection.get(), H5S_SELECT_SET, start, nullptr, extent, nullptr) < 0)
      fail(path, column.key, "cannot select rows");
    const void* data = column.memory_type == H5T_NATIVE_INT32 ? static_cast<const void*>(ints.data())
                                                              : static_cast<const void*>(bytes.data());
    if (H5Dwrite(dataset.get(), column.memory_type, memory.get(), selection.get(), H5P_DEFAULT, data) < 0)
      fail(path, column.key, "write failed (disk full?)");
  }
}

}  // namespace

void write_pretraining_shard(const std::filesystem::path& path,
                             const std::vector<PretrainingInstance>& instances, int32_t max_seq_length,
                             int32_t max_predictions) {
  for (const auto& instance : instances)
    if (instance.tokens.size() > static_cast<size_t>(max_seq_length) ||
        instance.masked_positions.size() > static_cast<size_t>(max_predictions))
      throw std::runtime_error(path.string() + ": an instance exceeds max_seq_length/max_predictions");
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // errors are reported by our exceptions
  const std::filesystem::path temporary =
      path.parent_path() / fmt::format(".{}.tmp-{}", path.filename().string(), getpid());
  const hsize_t length = static_cast<hsize_t>(max_seq_length);
  const hsize_t predictions = static_cast<hsize_t>(max_predictions);
  const Column columns[] = {
      {"input_ids", H5T_STD_I32LE, H5T_NATIVE_INT32, length},
      {"input_mask", H5T_STD_I8LE, H5T_NATIVE_INT8, length},
      {"segment_ids", H5T_STD_I8LE, H5T_NATIVE_INT8, length},
      {"masked_lm_positions", H5T_STD_I32LE, H5T_NATIVE_INT32, predictions},
      {"masked_lm_ids", H5T_STD_I32LE, H5T_NATIVE_INT32, predictions},
      {"next_sentence_labels", H5T_STD_I8LE, H5T_NATIVE_INT8, 0},
  };
  try {
    {
      Handle file(H5Fcreate(temporary.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT), H5Fclose);
      if (!file.ok()) fail(temporary, "", "cannot create file");
      for (const Column& column : columns) write_column(file.get(), temporary, column, instances);
      if (H5Fflush(file.get(), H5F_SCOPE_GLOBAL) < 0) fail(temporary, "", "flush failed");
      if (H5Fclose(file.release()) < 0) fail(temporary, "", "close failed");
    }
    publish_file(temporary, path);  // fsync, rename, folder fsync: a crash never leaves half a shard
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove(temporary, ignored);
    throw;
  }
}

}  // namespace loom::host
