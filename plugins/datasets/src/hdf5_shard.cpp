// HDF5 shard reading; see hdf5_shard.hpp.
#include "hdf5_shard.hpp"

#include <hdf5.h>

#include <iterator>
#include <new>

#include "loom/sdk/error.hpp"

namespace loom_datasets {
namespace {

class Handle {
 public:
  Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Handle(Handle&& other) noexcept : id_(other.id_), close_(other.close_) { other.id_ = -1; }
  ~Handle() {
    if (id_ >= 0) close_(id_);
  }
  hid_t get() const { return id_; }
  bool ok() const { return id_ >= 0; }

 private:
  hid_t id_;
  herr_t (*close_)(hid_t);
};

[[noreturn]] void fail(const std::string& path, const std::string& key, const std::string& what) {
  throw loom::IoError(path + ": " + (key.empty() ? "" : "key '" + key + "': ") + what);
}

struct KeySpec {
  const char* key;
  int rank;  // 2 = [N, L or P], 1 = [N]
  bool predictions;
};
constexpr KeySpec kKeys[] = {
    {"input_ids", 2, false},          {"input_mask", 2, false},   {"segment_ids", 2, false},
    {"masked_lm_positions", 2, true}, {"masked_lm_ids", 2, true}, {"next_sentence_labels", 1, false},
};

Handle open_file(const std::string& path) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // our exceptions carry the message
  if (H5Fis_hdf5(path.c_str()) <= 0)
    fail(path, "",
         "not a readable HDF5 file (missing, truncated or corrupted; re-run loom prep pretraining)");
  Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!file.ok()) fail(path, "", "cannot open as HDF5 (truncated or corrupted?)");
  return file;
}

Handle open_key(hid_t file, const std::string& path, const char* key) {
  if (H5Lexists(file, key, H5P_DEFAULT) <= 0)
    fail(path, key,
         "missing (a BERT pretraining shard needs input_ids, input_mask, segment_ids, "
         "masked_lm_positions, masked_lm_ids, next_sentence_labels)");
  Handle dataset(H5Dopen2(file, key, H5P_DEFAULT), H5Dclose);
  if (!dataset.ok()) fail(path, key, "cannot open dataset");
  return dataset;
}

// The bytes `dataset` declares (its shape × its stored element size) must be backed by what the
// file stores for it: a few-KB file declaring 10^12 rows would otherwise be trusted until the
// allocation for them fails. Unfiltered data is stored whole; compressed data may shrink, but no
// HDF5 filter comes near kMaxCompression (deflate's limit is 1032:1).
constexpr unsigned __int128 kMaxCompression = 4096;

void check_storage(hid_t dataset, const std::string& path, const char* key, const hsize_t* dims, int rank) {
  Handle type(H5Dget_type(dataset), H5Tclose);
  Handle plist(H5Dget_create_plist(dataset), H5Pclose);
  if (!type.ok() || !plist.ok()) fail(path, key, "cannot read its type or storage layout");
  unsigned __int128 declared = H5Tget_size(type.get());
  for (int d = 0; d < rank; ++d) declared *= dims[d];
  const unsigned __int128 stored = H5Dget_storage_size(dataset);
  const int filters = H5Pget_nfilters(plist.get());
  const bool backed = filters > 0 ? declared <= stored * kMaxCompression : declared <= stored;
  if (!backed) {
    std::string shape = std::to_string(dims[0]);
    for (int d = 1; d < rank; ++d) shape += " × " + std::to_string(dims[d]);
    fail(path, key,
         "declares " + shape + " values, but the file stores only " +
             std::to_string(static_cast<uint64_t>(stored)) + " bytes of them" +
             (filters > 0 ? " (compressed, beyond any filter's ratio)" : "") +
             ": the file is truncated, was never completely written, or its header is wrong; re-run loom "
             "prep pretraining");
  }
}

ShardShape check_keys(hid_t file, const std::string& path) {
  ShardShape shape;
  bool first = true;
  hsize_t all_dims[std::size(kKeys)][2] = {};
  for (const KeySpec& spec : kKeys) {
    Handle dataset = open_key(file, path, spec.key);
    Handle type(H5Dget_type(dataset.get()), H5Tclose);
    if (!type.ok() || H5Tget_class(type.get()) != H5T_INTEGER)
      fail(path, spec.key, "is not an integer dataset");
    Handle space(H5Dget_space(dataset.get()), H5Sclose);
    const int rank = space.ok() ? H5Sget_simple_extent_ndims(space.get()) : -1;
    if (rank != spec.rank)
      fail(path, spec.key, "has rank " + std::to_string(rank) + ", expected " + std::to_string(spec.rank));
    hsize_t* dims = all_dims[&spec - kKeys];
    H5Sget_simple_extent_dims(space.get(), dims, nullptr);
    if (first) shape.instances = dims[0], first = false;
    if (dims[0] != shape.instances)
      fail(path, spec.key,
           "has " + std::to_string(dims[0]) + " rows, input_ids has " + std::to_string(shape.instances));
    if (spec.rank == 2) {
      int32_t& width = spec.predictions ? shape.predictions : shape.seq_length;
      if (width == 0) width = static_cast<int32_t>(dims[1]);
      if (dims[1] != static_cast<hsize_t>(width) || width == 0)
        fail(path, spec.key,
             "has " + std::to_string(dims[1]) + " columns, expected " + std::to_string(width));
    }
  }
  // After every key is known to be there with consistent shapes, so those errors come first.
  for (const KeySpec& spec : kKeys) {
    Handle dataset = open_key(file, path, spec.key);
    check_storage(dataset.get(), path, spec.key, all_dims[&spec - kKeys], spec.rank);
  }
  return shape;
}

// libhdf5 saturates an integer that does not fit the type a key is read as: a stored 3774873600 read
// as int32 becomes 2147483647, which the value checks could take for a real token id (when the
// vocabulary size is unknown), and a 257 read as int8 is reported as 127. The conversion callback
// stops the read at the first such value instead and keeps it, as stored, for the message.
struct ConversionOverflow {
  bool seen = false;
  std::string value;
};

// A stored integer of `type` at `bytes`, as text ("?" for a type that is not one).
std::string stored_integer(hid_t type, const void* bytes) {
  const size_t size = H5Tget_size(type);
  if (size == 0 || size > 8 || H5Tget_class(type) != H5T_INTEGER) return "?";
  const bool big_endian = H5Tget_order(type) == H5T_ORDER_BE;
  const bool is_signed = H5Tget_sign(type) == H5T_SGN_2;
  const auto* byte = static_cast<const unsigned char*>(bytes);
  uint64_t bits = 0;
  for (size_t i = 0; i < size; ++i) bits = (bits << 8) | byte[big_endian ? i : size - 1 - i];
  if (is_signed && size < 8 && ((bits >> (8 * size - 1)) & 1) != 0) bits |= ~uint64_t{0} << (8 * size);
  return is_signed ? std::to_string(static_cast<int64_t>(bits)) : std::to_string(bits);
}

H5T_conv_ret_t refuse_overflow(H5T_conv_except_t exception, hid_t source_type, hid_t, void* source, void*,
                               void* user) {
  if (exception != H5T_CONV_EXCEPT_RANGE_HI && exception != H5T_CONV_EXCEPT_RANGE_LOW)
    return H5T_CONV_UNHANDLED;
  auto& overflow = *static_cast<ConversionOverflow*>(user);
  if (!overflow.seen) overflow = {true, stored_integer(source_type, source)};
  return H5T_CONV_ABORT;
}

template <typename T>
void read_key(hid_t file, const std::string& path, const char* key, hid_t memory_type, const char* type_name,
              std::vector<T>& out, size_t count) {
  Handle dataset = open_key(file, path, key);
  out.resize(count);
  if (count == 0) return;
  Handle transfer(H5Pcreate(H5P_DATASET_XFER), H5Pclose);
  ConversionOverflow overflow;
  if (!transfer.ok() || H5Pset_type_conv_cb(transfer.get(), refuse_overflow, &overflow) < 0)
    fail(path, key, "cannot set up reading it");
  const herr_t status = H5Dread(dataset.get(), memory_type, H5S_ALL, H5S_ALL, transfer.get(), out.data());
  if (overflow.seen)
    fail(path, key,
         "holds the value " + overflow.value + ", which does not fit in " + type_name +
             " (token ids and positions are read as int32; masks, segment ids and labels as int8): this is "
             "not a BERT pretraining shard's value; re-run loom prep pretraining");
  if (status < 0)
    fail(path, key, "cannot read data (truncated or corrupted file; re-run loom prep pretraining)");
}

ShardData read_shard_data(const std::string& path) {
  Handle file = open_file(path);
  ShardData data;
  data.shape = check_keys(file.get(), path);
  const size_t n = data.shape.instances;
  const size_t tokens = n * static_cast<size_t>(data.shape.seq_length);
  const size_t predictions = n * static_cast<size_t>(data.shape.predictions);
  read_key(file.get(), path, "input_ids", H5T_NATIVE_INT32, "int32", data.input_ids, tokens);
  read_key(file.get(), path, "input_mask", H5T_NATIVE_INT8, "int8", data.input_mask, tokens);
  read_key(file.get(), path, "segment_ids", H5T_NATIVE_INT8, "int8", data.segment_ids, tokens);
  read_key(file.get(), path, "masked_lm_positions", H5T_NATIVE_INT32, "int32", data.masked_positions,
           predictions);
  read_key(file.get(), path, "masked_lm_ids", H5T_NATIVE_INT32, "int32", data.masked_ids, predictions);
  read_key(file.get(), path, "next_sentence_labels", H5T_NATIVE_INT8, "int8", data.next_sentence, n);
  return data;
}

}  // namespace

ShardShape read_shard_shape(const std::string& path) {
  Handle file = open_file(path);
  return check_keys(file.get(), path);
}

ShardData read_shard(const std::string& path) {
  try {
    return read_shard_data(path);
  } catch (const std::bad_alloc&) {
    const ShardShape shape = read_shard_shape(path);
    throw loom::IoError(path + ": " + std::to_string(shape.instances) + " rows of " +
                        std::to_string(shape.seq_length) + " tokens do not fit in memory (a shard is read " +
                        "whole): split it into smaller shards (loom prep pretraining --shards)");
  }
}

}  // namespace loom_datasets
