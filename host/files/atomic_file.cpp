// Atomic file replacement (see atomic_file.hpp), through FileWriter.
#include "files/atomic_file.hpp"

namespace loom::host {

void write_file_atomically(const std::filesystem::path& path, std::span<const std::byte> bytes,
                           std::filesystem::perms permissions) {
  FileWriter writer(path, permissions);
  writer.write(bytes);
  writer.commit();
}

void write_file_atomically(const std::filesystem::path& path, std::string_view text,
                           std::filesystem::perms permissions) {
  write_file_atomically(path, std::as_bytes(std::span<const char>(text.data(), text.size())), permissions);
}

}  // namespace loom::host
