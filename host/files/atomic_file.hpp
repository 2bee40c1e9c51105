// Atomic file replacement: the bytes go to a temporary file in the target's directory, are
// fsync'ed, then renamed over the target and the directory is fsync'ed, so a reader (or a crash)
// sees either the old file or the complete new one, never a half-written file.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>
#include <string_view>

namespace loom::host {

/// Writes `bytes` to `path` atomically; throws std::runtime_error naming the path and the
/// failing system call (with errno text).
void write_file_atomically(const std::filesystem::path& path, std::span<const std::byte> bytes);

/// Text convenience overload.
void write_file_atomically(const std::filesystem::path& path, std::string_view text);

}  // namespace loom::host
