// See vocab_training_inputs.hpp.
#include "vocab_training_inputs.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "recipe/errors.hpp"

namespace loom::cli {

std::vector<std::filesystem::path> vocab_training_files(const std::vector<std::string>& inputs) {
  namespace fs = std::filesystem;
  std::vector<fs::path> files;
  for (const auto& input : inputs) {
    if (fs::is_directory(input)) {
      std::vector<fs::path> found;
      for (const auto& entry : fs::recursive_directory_iterator(input))
        if (entry.is_regular_file()) found.push_back(entry.path());
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::is_regular_file(input)) {
      files.emplace_back(input);
    } else {
      throw host::RecipeError(fmt::format("--input {}: no such file or directory", input));
    }
  }
  if (files.empty()) throw host::RecipeError("--input: the inputs hold no files");
  return files;
}

}  // namespace loom::cli
