// The SHA-256 of a vocabulary file, as `loom prep pretraining` records it in a shard manifest
// (loom/sdk/vocabulary_file.hpp): datasets compare the two to catch shards prepared with another
// vocabulary.
#pragma once

#include <string>

namespace loom::wordpiece {

/// Lower-case hex SHA-256 of the bytes of `path`; throws loom::ConfigError naming the file when
/// it cannot be read.
std::string file_sha256_hex(const std::string& path);

}  // namespace loom::wordpiece
