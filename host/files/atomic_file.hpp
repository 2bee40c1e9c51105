// Replacing a whole file at once: the bytes go to a temporary file in the target's directory, are
// fsync'ed, then renamed over the target and the directory is fsync'ed, so a reader (or a crash)
// sees either the old file or the complete new one, never a half-written file. The temporary file
// is created owner-only (mkstemp), so a file meant to stay private (0600) is never readable by
// others, not even while it is written. FileWriter (file_writer.hpp) does the work; it also writes
// a stream of bytes the same way and takes devices and FIFOs, which cannot be replaced.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>
#include <string_view>

#include "files/file_writer.hpp"

namespace loom::host {

/// Writes `bytes` to `path` atomically with mode `permissions`; throws FileWriteError naming the
/// path and the failing system call (with errno text).
void write_file_atomically(const std::filesystem::path& path, std::span<const std::byte> bytes,
                           std::filesystem::perms permissions = kSharedFile);

/// Text convenience overload.
void write_file_atomically(const std::filesystem::path& path, std::string_view text,
                           std::filesystem::perms permissions = kSharedFile);

}  // namespace loom::host
