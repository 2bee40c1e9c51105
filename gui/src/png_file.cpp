// PNG writing and reading through libpng's simplified API; see png_file.hpp.
#include "png_file.hpp"

#include <png.h>

#include <cstddef>
#include <stdexcept>
#include <vector>

#include "files/atomic_file.hpp"

namespace loom::dash {

void write_png(const std::filesystem::path& path, const RgbImage& image) {
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  png.width = static_cast<png_uint_32>(image.width);
  png.height = static_cast<png_uint_32>(image.height);
  png.format = PNG_FORMAT_RGB;
  // Encoded in memory, then written by the host's FileWriter: every write checked through the
  // close, and the file replaced whole.
  png_alloc_size_t size = 0;
  if (png_image_write_to_memory(&png, nullptr, &size, 0, image.pixels.data(), image.width * 3, nullptr) == 0)
    throw std::runtime_error(path.string() + ": cannot encode the PNG: " + png.message);
  std::vector<std::byte> bytes(size);
  if (png_image_write_to_memory(&png, bytes.data(), &size, 0, image.pixels.data(), image.width * 3,
                                nullptr) == 0)
    throw std::runtime_error(path.string() + ": cannot encode the PNG: " + png.message);
  bytes.resize(size);
  loom::host::write_file_atomically(path, bytes);
}

RgbImage read_png(const std::filesystem::path& path) {
  png_image png{};
  png.version = PNG_IMAGE_VERSION;
  if (png_image_begin_read_from_file(&png, path.c_str()) == 0)
    throw std::runtime_error(path.string() + ": not a readable PNG: " + png.message);
  png.format = PNG_FORMAT_RGB;
  RgbImage image;
  image.width = static_cast<int>(png.width);
  image.height = static_cast<int>(png.height);
  image.pixels.resize(PNG_IMAGE_SIZE(png));
  if (png_image_finish_read(&png, nullptr, image.pixels.data(), 0, nullptr) == 0)
    throw std::runtime_error(path.string() + ": cannot decode the PNG: " + png.message);
  return image;
}

}  // namespace loom::dash
