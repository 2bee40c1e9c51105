// The manifest.json `loom prep pretraining` writes beside its shards records the vocabulary the
// ids come from (path, SHA-256 of the file, size). Shards trained with another vocabulary are
// silently wrong — every id names another token — so a dataset checks each manifest of the
// directories its files are in against the run's tokenizer before it reads a row. Directories
// without a Loom manifest (NVIDIA's shards) are not checked: their ids are range-checked against
// the tokenizer's vocabulary when each shard is read (shard_values.hpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/sdk/tokenizer.hpp"

namespace loom_datasets {

/// The run's vocabulary file as the host handed it over (loom/sdk/vocabulary_file.hpp).
struct RunVocabularyFile {
  std::string path;    ///< "" when the host handed none
  std::string sha256;  ///< "" when unknown
};

/// What the manifests say about the vocabulary.
struct ManifestVocabulary {
  int32_t size = 0;      ///< tokens; 0 when no manifest was found
  std::string path;      ///< as recorded
  std::string manifest;  ///< the manifest it came from
};

/// Reads the manifest.json of every directory holding one of `files` (when there is one) and, with
/// a `tokenizer`, refuses a recorded vocabulary that is not the tokenizer's: a different SHA-256
/// when the run's vocabulary file is known (`run`), else a different size. Throws loom::IoError
/// naming the manifest, both vocabularies and what to do; a malformed manifest names the key.
ManifestVocabulary check_shard_manifests(const std::vector<std::string>& files,
                                         const loom::Tokenizer* tokenizer, const RunVocabularyFile& run);

}  // namespace loom_datasets
