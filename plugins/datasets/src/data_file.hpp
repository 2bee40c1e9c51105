// Opening a dataset's file (data.file): a stream, or a loom::IoError naming the path. A folder
// opens as a stream that reads nothing, which the readers would report as an empty file.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

#include "loom/sdk/error.hpp"

namespace loom_datasets {

inline std::ifstream open_data_file(const std::string& path) {
  std::error_code error;
  if (std::filesystem::is_directory(path, error))
    throw loom::IoError(path + ": is a folder, not a data file (data.file)");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw loom::IoError(path + ": cannot open (data.file)");
  return in;
}

}  // namespace loom_datasets
