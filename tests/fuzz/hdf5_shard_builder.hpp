// Builds a pretraining shard from fuzz bytes through libhdf5 itself, so every file is structurally
// valid HDF5: what the bytes choose is what a shard may get wrong — each key present or not, a
// dataset, a group or a link (dangling, to another key, external), its type (integers of every
// width, sign and byte order, floats, strings, enums, bitfields), rank and dimensions (huge ones
// too), layout (contiguous, compact, chunked with deflate, shuffle, fletcher32), allocation time,
// whether and which values are written, attributes, extra keys, and finally a cut of the file.
// libhdf5 itself crashes on damaged metadata (docs/measurements/fuzzing-*/README.md), which is not
// the reader's to fix; this keeps the fuzzer on the reader's own checks. Header-only: used by one
// harness.
#pragma once

#include <hdf5.h>
#include <unistd.h>

#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace loom_fuzz {

/// The six keys of a BERT pretraining shard with the rank the reader expects.
struct ShardKey {
  const char* name;
  int rank;
};
inline constexpr ShardKey kShardKeys[] = {{"input_ids", 2},           {"input_mask", 2},
                                          {"segment_ids", 2},         {"masked_lm_positions", 2},
                                          {"masked_lm_ids", 2},       {"next_sentence_labels", 1}};

/// What was built under one key, as the reader would find it (a link to another key is that key's
/// dataset).
struct BuiltKey {
  bool dataset = false;  ///< a dataset is reachable under the name
  bool integer = false;  ///< its type class is H5T_INTEGER
  bool is_signed = false;
  std::size_t type_size = 0;
  int rank = 0;                 ///< -1: a null dataspace
  std::vector<hsize_t> dims;    ///< rank entries
  bool backed = false;          ///< storage holds every element (written, allocated early, compact)
  std::vector<__int128> values; ///< integer datasets: every element as stored (0 where unwritten)
};

struct BuiltShard {
  BuiltKey keys[std::size(kShardKeys)];
  bool cut = false;  ///< the file was truncated after it was written
};

namespace detail {

struct TypeChoice {
  hid_t type;  // owned copy
  bool integer, is_signed, big_endian;
  std::size_t size;
};

inline TypeChoice pick_type(FuzzedDataProvider& fuzz, bool wide) {
  struct Entry {
    hid_t base;
    bool integer, is_signed, big_endian;
  };
  const Entry entries[] = {
      {H5T_STD_I8LE, true, true, false},   {H5T_STD_U8LE, true, false, false},  {H5T_STD_I16LE, true, true, false},
      {H5T_STD_U16LE, true, false, false}, {H5T_STD_I32LE, true, true, false},  {H5T_STD_U32LE, true, false, false},
      {H5T_STD_I64LE, true, true, false},  {H5T_STD_U64LE, true, false, false}, {H5T_STD_I32BE, true, true, true},
      {H5T_STD_U16BE, true, false, true},  {H5T_STD_I64BE, true, true, true},   {H5T_IEEE_F32LE, false, false, false},
      {H5T_IEEE_F64LE, false, false, false}, {H5T_C_S1, false, false, false},   {H5T_STD_B8LE, false, false, false},
      {H5T_NATIVE_INT8, false, false, false},  // as the base of an enum
  };
  // 0: the type the reader reads the key as (int32 or int8).
  const std::size_t index =
      (fuzz.ConsumeIntegralInRange<std::size_t>(0, std::size(entries) - 1) + (wide ? 4 : 0)) % std::size(entries);
  const Entry& entry = entries[index];
  TypeChoice choice{H5Tcopy(entry.base), entry.integer, entry.is_signed, entry.big_endian, 0};
  if (entry.base == H5T_C_S1) H5Tset_size(choice.type, 4);
  if (index == std::size(entries) - 1) {  // an enum over int8: not an integer class
    H5Tclose(choice.type);
    choice.type = H5Tenum_create(H5T_NATIVE_INT8);
    for (signed char value : {0, 1}) H5Tenum_insert(choice.type, value == 0 ? "zero" : "one", &value);
  }
  choice.size = H5Tget_size(choice.type);
  return choice;
}

// Mostly small, sometimes anything up to 2^64 - 1: declared sizes the file cannot hold.
inline hsize_t pick_extent(FuzzedDataProvider& fuzz) {
  if (fuzz.ConsumeIntegralInRange<int>(0, 15) != 0) return fuzz.ConsumeIntegralInRange<hsize_t>(0, 12);
  return fuzz.ConsumeIntegral<std::uint64_t>() >> fuzz.ConsumeIntegralInRange<int>(0, 63);
}

// Element values: mostly 0 and 1 (what masks, segments and labels hold), sometimes any bytes.
inline std::vector<unsigned char> pick_values(FuzzedDataProvider& fuzz, const TypeChoice& type, std::size_t count) {
  std::vector<unsigned char> bytes(count * type.size, 0);
  for (std::size_t i = 0; i < count; ++i) {
    unsigned char* element = bytes.data() + i * type.size;
    const auto choice = fuzz.ConsumeIntegral<std::uint8_t>();
    if (choice < 0xE0) {
      element[type.big_endian ? type.size - 1 : 0] = choice % 3 == 2 ? choice % 7 : choice % 2;
    } else {
      const std::vector<unsigned char> raw = fuzz.ConsumeBytes<unsigned char>(type.size);
      if (!raw.empty()) std::memcpy(element, raw.data(), raw.size());
    }
  }
  return bytes;
}

inline __int128 decode(const unsigned char* element, const TypeChoice& type) {
  unsigned __int128 bits = 0;
  for (std::size_t b = 0; b < type.size; ++b) {
    const std::size_t from = type.big_endian ? b : type.size - 1 - b;
    bits = (bits << 8) | element[from];
  }
  if (type.is_signed && type.size < 16 && (bits >> (8 * type.size - 1)) != 0)
    bits |= ~((static_cast<unsigned __int128>(1) << (8 * type.size)) - 1);
  return static_cast<__int128>(bits);
}

// The shape every key shares in a sound shard: N rows, L tokens, P predictions.
struct SoundShape {
  hsize_t rows, tokens, predictions;
};

// One dataset under `name`, declared like `key` of a sound shard of `shape` when every choice
// reads 0; fills `built` with what the reader will find. Returns false when libhdf5 refuses the
// combination (the key is then left out).
inline bool create_dataset(FuzzedDataProvider& fuzz, hid_t file, const char* name, const ShardKey& key,
                           bool wide, const SoundShape& shape, BuiltKey& built) {
  const TypeChoice type = pick_type(fuzz, wide);
  const int rank_choice = fuzz.ConsumeIntegralInRange<int>(0, 5);
  const int rank = rank_choice == 0 ? key.rank : rank_choice - 2;  // the key's, or -1 (null) to 3
  std::vector<hsize_t> dims(static_cast<std::size_t>(std::max(rank, 0)));
  const bool predictions = std::strncmp(name, "masked_", 7) == 0;
  for (std::size_t d = 0; d < dims.size(); ++d) {
    const hsize_t sound = d == 0 ? shape.rows : d == 1 ? (predictions ? shape.predictions : shape.tokens) : 1;
    dims[d] = fuzz.ConsumeIntegralInRange<int>(0, 7) == 0 ? sound : pick_extent(fuzz);
  }
  const int layout = fuzz.ConsumeIntegralInRange<int>(0, 2);  // contiguous, compact, chunked
  bool early = fuzz.ConsumeBool();
  std::vector<hsize_t> unlimited(dims.size(), H5S_UNLIMITED);
  const bool chunked = layout == 2 && rank > 0;
  const hid_t space = rank < 0    ? H5Screate(H5S_NULL)
                      : rank == 0 ? H5Screate(H5S_SCALAR)
                                  : H5Screate_simple(rank, dims.data(), chunked ? unlimited.data() : nullptr);
  const hid_t plist = H5Pcreate(H5P_DATASET_CREATE);
  unsigned __int128 count = 1;
  for (hsize_t extent : dims) count *= extent;
  if (rank < 0) count = 0;
  if (chunked) {
    std::vector<hsize_t> chunk(dims.size());
    for (hsize_t& extent : chunk) extent = fuzz.ConsumeIntegralInRange<hsize_t>(1, 8);
    H5Pset_chunk(plist, rank, chunk.data());
    if (fuzz.ConsumeBool()) H5Pset_shuffle(plist);
    if (fuzz.ConsumeBool()) H5Pset_deflate(plist, fuzz.ConsumeIntegralInRange<unsigned>(0, 9));
    if (fuzz.ConsumeBool()) H5Pset_fletcher32(plist);
  } else if (layout == 1 && count * type.size < 60000) {
    H5Pset_layout(plist, H5D_COMPACT);
  }
  const bool compact = H5Pget_layout(plist) == H5D_COMPACT;
  // Early allocation writes the fill value over the whole extent: only for small datasets.
  early = early && count * type.size <= 65536;
  if (!compact) H5Pset_alloc_time(plist, early ? H5D_ALLOC_TIME_EARLY : H5D_ALLOC_TIME_LATE);
  const hid_t dataset = space < 0 ? -1 : H5Dcreate2(file, name, type.type, space, H5P_DEFAULT, plist, H5P_DEFAULT);
  bool made = dataset >= 0;
  if (made) {
    built.dataset = true;
    built.integer = type.integer;
    built.is_signed = type.is_signed;
    built.type_size = type.size;
    built.rank = rank;
    built.dims = dims;
    built.backed = compact || early || count == 0;
    const bool small = count <= 2048;
    if (type.integer && small) built.values.assign(static_cast<std::size_t>(count), 0);
    if (small && count > 0 && type.integer && !fuzz.ConsumeBool()) {
      const std::vector<unsigned char> bytes = pick_values(fuzz, type, static_cast<std::size_t>(count));
      if (H5Dwrite(dataset, type.type, H5S_ALL, H5S_ALL, H5P_DEFAULT, bytes.data()) >= 0) {
        built.backed = true;
        for (std::size_t i = 0; i < built.values.size(); ++i) built.values[i] = decode(bytes.data() + i * type.size, type);
      }
    }
    if (fuzz.ConsumeIntegralInRange<int>(0, 7) == 7) {  // an attribute: nothing the reader reads
      const hid_t attribute_space = H5Screate(H5S_SCALAR);
      const hid_t attribute =
          H5Acreate2(dataset, "note", H5T_NATIVE_INT32, attribute_space, H5P_DEFAULT, H5P_DEFAULT);
      const int value = fuzz.ConsumeIntegral<int>();
      if (attribute >= 0) H5Awrite(attribute, H5T_NATIVE_INT32, &value), H5Aclose(attribute);
      H5Sclose(attribute_space);
    }
    H5Dclose(dataset);
  }
  H5Pclose(plist);
  if (space >= 0) H5Sclose(space);
  H5Tclose(type.type);
  return made;
}

}  // namespace detail

/// Writes a shard chosen by `fuzz` to `path` (replacing it).
inline BuiltShard build_shard(FuzzedDataProvider& fuzz, const std::string& path) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  BuiltShard shard;
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (file < 0) std::abort();
  // A choice that reads 0 (what an exhausted input gives) builds a sound shard: 2 rows, 1 token,
  // 1 prediction, each key a contiguous dataset of its own type with its values written (zeros).
  const detail::SoundShape shape{(fuzz.ConsumeIntegralInRange<hsize_t>(0, 8) + 2) % 9,
                                 fuzz.ConsumeIntegralInRange<hsize_t>(1, 16),
                                 fuzz.ConsumeIntegralInRange<hsize_t>(1, 8)};
  // Kinds: 0-3 a dataset, 4 absent, 5 a group, 6 a dangling soft link, 7 an external link,
  // 8 a soft link to an earlier key.
  for (std::size_t k = 0; k < std::size(kShardKeys); ++k) {
    const char* name = kShardKeys[k].name;
    const bool wide = k == 0 || k == 3 || k == 4;  // int32 keys; the others are int8
    const int kind = fuzz.ConsumeIntegralInRange<int>(0, 8);
    if (kind <= 3) {
      detail::create_dataset(fuzz, file, name, kShardKeys[k], wide, shape, shard.keys[k]);
    } else if (kind == 5) {
      const hid_t group = H5Gcreate2(file, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
      if (group >= 0) H5Gclose(group);
    } else if (kind == 6) {
      H5Lcreate_soft("/nowhere", file, name, H5P_DEFAULT, H5P_DEFAULT);
    } else if (kind == 7) {
      H5Lcreate_external("absent-file.hdf5", "/input_ids", file, name, H5P_DEFAULT, H5P_DEFAULT);
    } else if (kind == 8 && k > 0) {
      const std::size_t target = fuzz.ConsumeIntegralInRange<std::size_t>(0, k - 1);
      H5Lcreate_soft(kShardKeys[target].name, file, name, H5P_DEFAULT, H5P_DEFAULT);
      shard.keys[k] = shard.keys[target];
    }
  }
  const int extra = fuzz.ConsumeIntegralInRange<int>(0, 2);  // keys the reader does not read
  for (int e = 0; e < extra; ++e) {
    BuiltKey ignored;
    detail::create_dataset(fuzz, file, e == 0 ? "extra" : "input_ids_copy", kShardKeys[0], true, shape, ignored);
  }
  H5Fclose(file);
  if (fuzz.ConsumeIntegralInRange<int>(0, 15) == 15) {
    const off_t size = static_cast<off_t>(fuzz.ConsumeIntegralInRange<std::uint32_t>(0, 1u << 20));
    shard.cut = ::truncate(path.c_str(), size) == 0;
  }
  return shard;
}

}  // namespace loom_fuzz
