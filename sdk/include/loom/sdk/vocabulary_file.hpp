// The vocabulary file behind a run's tokenizer — its path and the SHA-256 of its bytes — as two
// named interfaces (interfaces.hpp): a tokenizer says which file it read (VocabularyFile), and
// the host hands that to the run's datasets before they open (DatasetVocabularyFile).
//
// Data prepared with one vocabulary and trained with another is silently wrong: every id means a
// different token. `loom prep pretraining` records the vocabulary's path and SHA-256 in the shards'
// manifest.json; dataset/pretraining-shards compares it with the run's, and names the vocabulary
// in its errors (one without a [MASK] token, an id past its end).
#pragma once

#include <cstdint>

#include "loom/sdk/version.hpp"

LOOM_SDK_NAMESPACE_BEGIN

/// Offered by a tokenizer that read its vocabulary from a file.
class VocabularyFile {
 public:
  static constexpr const char* kInterfaceName = "loom.tokenizer.vocabulary_file";
  static constexpr uint32_t kInterfaceVersion = 1;

  /// The vocabulary file as the recipe named it (NUL-terminated, valid while the tokenizer lives).
  virtual const char* vocabulary_path() const = 0;
  /// Lower-case hex SHA-256 of the file's bytes as the tokenizer read them; "" when unknown.
  virtual const char* vocabulary_sha256() const = 0;

 protected:
  ~VocabularyFile() = default;
};

/// Offered by a dataset that checks its data against the run's vocabulary file. The host calls it
/// before `open()` when the run's tokenizer offers VocabularyFile; the strings are copied.
class DatasetVocabularyFile {
 public:
  static constexpr const char* kInterfaceName = "loom.dataset.vocabulary_file";
  static constexpr uint32_t kInterfaceVersion = 1;

  virtual void use_vocabulary_file(const char* path, const char* sha256) = 0;

 protected:
  ~DatasetVocabularyFile() = default;
};

LOOM_SDK_NAMESPACE_END
