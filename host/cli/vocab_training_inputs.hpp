// What `loom vocab train` reads, for both kinds: the files named or found under directories named
// (each group sorted), line by line.
#pragma once

#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace loom::cli {

/// Files named, and every regular file under directories named, each group sorted. Throws
/// host::RecipeError for a missing input or none at all.
std::vector<std::filesystem::path> vocab_training_files(const std::vector<std::string>& inputs);

/// Calls `per_line(line)` for every line of `files` (without its newline).
template <typename PerLine>
void for_each_training_line(const std::vector<std::filesystem::path>& files, PerLine&& per_line) {
  std::string line;
  for (const auto& file : files) {
    std::ifstream in(file, std::ios::binary);
    if (!in) throw std::runtime_error(file.string() + ": cannot read");
    while (std::getline(in, line)) per_line(line);
  }
}

/// A file removed when the scope ends.
struct TemporaryFile {
  std::filesystem::path path;
  ~TemporaryFile() {
    std::error_code ignored;
    std::filesystem::remove(path, ignored);
  }
};

}  // namespace loom::cli
