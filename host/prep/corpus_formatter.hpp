// Stage 1 of `loom prep pretraining` (pretraining_prep.hpp): documents → sentences → de-duplicated,
// tokenized documents, appended to per-shard spill files, plus formatted.txt and the duplicate
// report. Streams: at most a window of documents is in memory.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "prep/pretraining_instances.hpp"
#include "loom/sdk/tokenizer.hpp"

namespace loom::host {

struct FormatterOptions {
  std::string input_format = "raw";  ///< "raw" (file = document, prose) or "sentences"
  bool dedup = true;
  double heldout_fraction = 0.01;
  uint64_t seed = 12345;
  int32_t threads = 1;
};

struct DuplicateLine {
  std::string text;
  uint64_t occurrences = 0;  ///< total, including the kept first one
};

struct FormattingReport {
  uint64_t input_bytes = 0;
  uint64_t documents = 0;        ///< non-empty documents kept
  uint64_t empty_documents = 0;  ///< dropped (nothing left after cleaning / de-duplication)
  uint64_t sentences = 0;        ///< kept sentence lines
  uint64_t duplicate_lines_removed = 0;
  uint64_t tokens = 0;
  std::vector<uint64_t> spill_documents;      ///< per spill file
  std::vector<uint64_t> spill_tokens;         ///< per spill file
  std::vector<DuplicateLine> top_duplicates;  ///< most repeated lines, most first (≤ 20)
};

/// Formats `files` in order. Documents go to spill file `spills.back()` (held out) or to the
/// training spill (all others) with the fewest tokens so far. Writes `formatted_path` and
/// `duplicates_path` (TSV: occurrences, line; most repeated first).
FormattingReport format_corpus(const std::vector<std::filesystem::path>& files,
                               const FormatterOptions& options, const loom::Tokenizer& tokenizer,
                               const std::filesystem::path& formatted_path,
                               const std::filesystem::path& duplicates_path,
                               const std::vector<std::filesystem::path>& spills,
                               const std::function<void(const std::string&)>& progress);

/// Reads back one spill file written by format_corpus.
std::vector<TokenizedDocument> read_spill(const std::filesystem::path& path);

}  // namespace loom::host
