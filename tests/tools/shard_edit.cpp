// shard_edit FILE KEY ROW COLUMN VALUE: overwrites one int32 element of KEY ([ROW] of a
// one-dimensional key, COLUMN ignored) in a pre-training shard, so a test can plant a bad value
// (an id past the vocabulary, segment id 5) in a shard `loom prep pretraining` wrote.
// shard_edit FILE KEY --delete: removes KEY from the file.
// Exits 1 naming what failed. For the bad-input tests (tests/bad_input/shards.sh).
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>

#include <hdf5.h>

namespace {

int fail(const std::string& what) {
  std::cerr << "shard_edit: " << what << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const bool remove = argc == 4 && std::string(argv[3]) == "--delete";
  if (argc != 6 && !remove) {
    std::cerr << "usage: shard_edit FILE KEY ROW COLUMN VALUE | shard_edit FILE KEY --delete\n";
    return 2;
  }
  const std::string path = argv[1], key = argv[2];
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // the messages below name the failure
  const hid_t file = H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT);
  if (file < 0) return fail(path + ": cannot open as HDF5");
  if (remove) {
    const herr_t status = H5Ldelete(file, key.c_str(), H5P_DEFAULT);
    H5Fclose(file);
    return status < 0 ? fail(path + ": no key " + key) : 0;
  }
  const hid_t dataset = H5Dopen2(file, key.c_str(), H5P_DEFAULT);
  if (dataset < 0) {
    H5Fclose(file);
    return fail(path + ": no key " + key);
  }
  const hid_t space = H5Dget_space(dataset);
  const int rank = H5Sget_simple_extent_ndims(space);
  const hsize_t start[2] = {std::strtoull(argv[3], nullptr, 10), std::strtoull(argv[4], nullptr, 10)};
  const hsize_t count[2] = {1, 1};
  const int32_t value = static_cast<int32_t>(std::strtol(argv[5], nullptr, 10));
  herr_t status = H5Sselect_hyperslab(space, H5S_SELECT_SET, start, nullptr, count, nullptr);
  const hid_t memory = H5Screate_simple(rank, count, nullptr);
  if (status >= 0) status = H5Dwrite(dataset, H5T_NATIVE_INT32, memory, space, H5P_DEFAULT, &value);
  H5Sclose(memory);
  H5Sclose(space);
  H5Dclose(dataset);
  H5Fclose(file);
  return status < 0 ? fail(path + ": cannot write " + key + "[" + argv[3] + "][" + argv[4] + "]") : 0;
}
