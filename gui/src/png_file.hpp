// PNG files with Debian's libpng: loom-dash --screenshot writes the window, and the GUI test reads
// the screenshot back to check what was drawn.
#pragma once

#include <cstdint>
#include <filesystem>
#include <vector>

namespace loom::dash {

/// 8-bit RGB pixels, rows top to bottom.
struct RgbImage {
  int width = 0, height = 0;
  std::vector<uint8_t> pixels;  ///< width * height * 3
};

/// Writes `image`; throws std::runtime_error naming the file.
void write_png(const std::filesystem::path& path, const RgbImage& image);
/// Reads an 8-bit RGB or RGBA PNG (alpha dropped); throws std::runtime_error naming the file.
RgbImage read_png(const std::filesystem::path& path);

}  // namespace loom::dash
