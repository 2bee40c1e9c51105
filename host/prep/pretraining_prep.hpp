// `loom prep pretraining`: raw text → formatted corpus → HDF5 pretraining shards + manifest.
//
// Stages (docs/data.md):
// 1. Formatting, streamed: every input document is split into sentences (sentence_splitter.hpp,
//    or taken line by line for `sentences` input), exact repeated sentence lines are dropped
//    corpus-wide (first occurrence kept, reported), the rest tokenized (threads in parallel,
//    results consumed in input order). `formatted.txt` gets one sentence per line and a blank
//    line between documents. Each document goes to the held-out split (a seeded hash of its index
//    below --heldout-fraction) or to the training shard with the fewest tokens so far, and its
//    token ids are appended to that shard's spill file: memory holds a window of documents only.
// 2. Instances, one shard at a time per thread: the shard's documents are loaded, turned into
//    NSP pairs with static masks exactly as the reference (pretraining_instances.hpp, RNG seeded
//    with seed + shard index), shuffled and written (pretraining_shard_writer.hpp). Peak memory is
//    one shard's documents and instances per thread.
// 3. manifest.json (arguments, vocabulary sha256, counts, per-shard sha256), written last and
//    atomically: a directory without it is an incomplete run.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "loom/sdk/tokenizer.hpp"

namespace loom::host {

struct PrepOptions {
  std::string vocab;                 ///< recorded in the manifest (sha256); the tokenizer is given
  std::string tokenizer_component = "tokenizer/wordpiece";  ///< recorded in the manifest
  std::vector<std::string> inputs;   ///< files or directories (searched recursively, sorted)
  std::string output;                ///< output directory
  std::string input_format = "raw";  ///< "raw": a file is one document of prose; "sentences":
                                     ///< one sentence per line, blank line between documents
  int32_t max_seq_length = 128;
  int32_t max_predictions = 20;
  double masked_lm_prob = 0.15;
  double short_seq_prob = 0.1;
  int32_t dupe_factor = 5;
  uint64_t seed = 12345;
  int32_t shards = 0;  ///< training shards; 0 = max(threads, input size / 16 MiB)
  double heldout_fraction = 0.01;
  bool whole_word_masking = false;
  double mask_ratio = 0.8;
  double random_ratio = 0.1;
  bool dedup = true;
  int32_t threads = 0;  ///< 0 = hardware concurrency
  bool cased = false;   ///< recorded in the manifest
};

struct PrepSummary {
  uint64_t documents = 0;
  uint64_t training_instances = 0;
  uint64_t heldout_instances = 0;
  uint64_t duplicate_lines_removed = 0;
  std::vector<std::string> shard_files;
};

/// Runs every stage; `progress` receives one human-readable line at a time (may be empty).
/// Throws std::invalid_argument for bad options or missing inputs (all option problems at once),
/// std::runtime_error naming the file for failures while reading or writing.
PrepSummary prep_pretraining(const PrepOptions& options, const loom::Tokenizer& tokenizer,
                             const std::function<void(const std::string&)>& progress);

}  // namespace loom::host
