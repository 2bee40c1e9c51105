// SHA-256 digests (OpenSSL's EVP API) as lower-case hex, for manifests.
#pragma once

#include <cstddef>
#include <filesystem>
#include <string>

namespace loom::host {

/// Hex SHA-256 of `size` bytes at `data`.
std::string sha256_hex(const void* data, size_t size);

/// Hex SHA-256 of a file's content, read in blocks; throws std::runtime_error naming the file.
std::string sha256_file_hex(const std::filesystem::path& path);

}  // namespace loom::host
