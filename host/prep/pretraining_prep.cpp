// `loom prep pretraining` orchestration; see pretraining_prep.hpp.
#include "prep/pretraining_prep.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "files/atomic_file.hpp"
#include "files/sha256.hpp"
#include "prep/corpus_formatter.hpp"
#include "prep/pretraining_instances.hpp"
#include "prep/pretraining_shard_writer.hpp"
#include "prep/python_random.hpp"
#include "recipe/errors.hpp"

namespace fs = std::filesystem;

namespace loom::host {
namespace {

void check_options(const PrepOptions& o) {
  std::vector<std::string> problems;
  auto need = [&](bool ok, const std::string& message) {
    if (!ok) problems.push_back(message);
  };
  need(!o.inputs.empty(), "--input: at least one file or directory is required");
  need(!o.output.empty(), "--output: an output directory is required");
  need(o.max_seq_length >= 8 && o.max_seq_length <= 65536, "--max-seq-length must be in [8, 65536]");
  need(o.max_predictions >= 1 && o.max_predictions <= o.max_seq_length,
       "--max-predictions must be in [1, max-seq-length]");
  need(o.masked_lm_prob > 0 && o.masked_lm_prob < 1, "--masked-lm-prob must be in (0, 1)");
  need(o.short_seq_prob >= 0 && o.short_seq_prob <= 1, "--short-seq-prob must be in [0, 1]");
  need(o.dupe_factor >= 1, "--dupe-factor must be ≥ 1");
  need(o.shards >= 0, "--shards must be ≥ 0 (0 = automatic)");
  need(o.heldout_fraction >= 0 && o.heldout_fraction < 1, "--heldout-fraction must be in [0, 1)");
  need(o.mask_ratio >= 0 && o.random_ratio >= 0 && o.mask_ratio + o.random_ratio <= 1 + 1e-12,
       "--mask-ratio and --random-ratio must be ≥ 0 with a sum ≤ 1 (the rest keeps the token)");
  need(o.input_format == "raw" || o.input_format == "sentences", "--input-format must be raw or sentences");
  if (!problems.empty()) {
    std::string all;
    for (const auto& p : problems) all += (all.empty() ? "" : "\n") + p;
    throw std::invalid_argument(all);
  }
}

// Regular, non-hidden files under the inputs, each directory's files sorted by path.
std::vector<fs::path> input_files(const std::vector<std::string>& inputs) {
  std::vector<fs::path> files;
  for (const auto& input : inputs) {
    const fs::path path(input);
    if (fs::is_regular_file(path)) {
      files.push_back(path);
    } else if (fs::is_directory(path)) {
      std::vector<fs::path> found;
      for (const auto& entry : fs::recursive_directory_iterator(path))
        if (entry.is_regular_file() && entry.path().filename().string().front() != '.')
          found.push_back(entry.path());
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else {
      throw std::invalid_argument(input + ": no such file or directory (--input)");
    }
  }
  if (files.empty()) throw std::invalid_argument("--input: no files found in the given paths");
  return files;
}

// `vocab_path`: the file, named in the error (a vocabulary without one of them is the user's input).
MaskingVocabulary masking_vocabulary(const loom::Tokenizer& tokenizer, const std::string& vocab_path) {
  const loom::SpecialTokenIds special = tokenizer.special_token_ids();
  std::vector<std::string> lacking;
  if (special.cls < 0) lacking.emplace_back("[CLS]");
  if (special.sep < 0) lacking.emplace_back("[SEP]");
  if (special.mask < 0) lacking.emplace_back("[MASK]");
  if (!lacking.empty())
    throw InputError(
        fmt::format("{}: the vocabulary has no {} token; pre-training instances need [CLS], [SEP] "
                    "and [MASK] (--vocab)",
                    vocab_path, fmt::join(lacking, ", ")));
  MaskingVocabulary vocab{tokenizer.vocab_size(), special.cls, special.sep, special.mask, {}};
  vocab.is_continuation.resize(static_cast<size_t>(vocab.vocab_size));
  for (int32_t id = 0; id < vocab.vocab_size; ++id)
    vocab.is_continuation[static_cast<size_t>(id)] = tokenizer.is_continuation(id) ? 1 : 0;
  return vocab;
}

struct ShardResult {
  std::string file;
  std::string split;
  uint64_t documents = 0;
  uint64_t tokens = 0;
  uint64_t instances = 0;
  uint64_t random_next = 0;
  uint64_t masked = 0;
  std::string sha256;
};

nlohmann::json arguments_json(const PrepOptions& o, int32_t shards, int32_t threads) {
  return {{"vocab", o.vocab},
          {"input", o.inputs},
          {"output", o.output},
          {"input_format", o.input_format},
          {"max_seq_length", o.max_seq_length},
          {"max_predictions", o.max_predictions},
          {"masked_lm_prob", o.masked_lm_prob},
          {"short_seq_prob", o.short_seq_prob},
          {"dupe_factor", o.dupe_factor},
          {"seed", o.seed},
          {"shards", shards},
          {"heldout_fraction", o.heldout_fraction},
          {"whole_word_masking", o.whole_word_masking},
          {"mask_ratio", o.mask_ratio},
          {"random_ratio", o.random_ratio},
          {"dedup", o.dedup},
          {"cased", o.cased},
          {"threads", threads}};
}

}  // namespace

PrepSummary prep_pretraining(const PrepOptions& options, const loom::Tokenizer& tokenizer,
                             const std::function<void(const std::string&)>& progress) {
  check_options(options);
  // Before the output folder is touched: a refused vocabulary leaves an earlier prep's shards whole.
  const MaskingVocabulary vocab = masking_vocabulary(tokenizer, options.vocab);
  const auto start = std::chrono::steady_clock::now();
  auto say = [&](const std::string& line) {
    if (progress) progress(line);
  };
  const std::vector<fs::path> files = input_files(options.inputs);
  uint64_t input_bytes = 0;
  for (const auto& file : files) input_bytes += fs::file_size(file);
  const int32_t threads = options.threads > 0
                              ? options.threads
                              : std::max(1, static_cast<int32_t>(std::thread::hardware_concurrency()));
  const int32_t shards = options.shards > 0
                             ? options.shards
                             : std::max<int32_t>(threads, static_cast<int32_t>((input_bytes >> 24) + 1));
  say(fmt::format("prep: {} files, {:.1f} MB of text → {} training shards + 1 held-out shard, {} threads",
                  files.size(), static_cast<double>(input_bytes) / 1e6, shards, threads));

  const fs::path output(options.output);
  std::error_code error;
  fs::create_directories(output, error);
  if (!fs::is_directory(output))  // a file in its place, /proc, no permission: named, not a library message
    throw std::runtime_error(
        fmt::format("{}: cannot be written: {} (--output)", output.string(),
                    fs::exists(output) ? "it is a file, not a folder" : error.message()));
  // A manifest marks a complete directory: remove the old one before changing anything.
  fs::remove(output / "manifest.json");
  const fs::path scratch = output / ".prep-spill";
  fs::create_directories(scratch);
  std::vector<fs::path> spills;
  std::vector<ShardResult> results(static_cast<size_t>(shards) + 1);
  for (int32_t s = 0; s <= shards; ++s) {
    spills.push_back(scratch / fmt::format("spill_{:05}.bin", s));
    results[static_cast<size_t>(s)].split = s < shards ? "training" : "heldout";
    results[static_cast<size_t>(s)].file =
        s < shards ? fmt::format("training_{:05}.hdf5", s) : std::string("heldout_00000.hdf5");
  }

  FormatterOptions formatter{options.input_format, options.dedup, options.heldout_fraction, options.seed,
                             threads};
  const FormattingReport report = format_corpus(files, formatter, tokenizer, output / "formatted.txt",
                                                output / "duplicates.tsv", spills, progress);
  say(fmt::format("prep: {} documents, {} sentences, {} tokens; {} repeated lines removed (duplicates.tsv)",
                  report.documents, report.sentences, report.tokens, report.duplicate_lines_removed));

  const MaskingOptions masking{options.max_seq_length,    options.max_predictions, options.masked_lm_prob,
                               options.short_seq_prob,    options.mask_ratio,      options.random_ratio,
                               options.whole_word_masking};
  std::atomic<size_t> next_shard{0};
  std::atomic<size_t> shards_done{0};
  std::mutex progress_mutex;
  std::vector<std::exception_ptr> errors(static_cast<size_t>(threads));
  auto work = [&](size_t thread) {
    try {
      for (size_t s = next_shard++; s < results.size(); s = next_shard++) {
        ShardResult& result = results[s];
        std::vector<TokenizedDocument> documents = read_spill(spills[s]);
        result.documents = documents.size();
        result.tokens = report.spill_tokens[s];
        PythonRandom rng(options.seed + s);
        const std::vector<PretrainingInstance> instances =
            create_training_instances(std::move(documents), options.dupe_factor, masking, vocab, rng);
        result.instances = instances.size();
        for (const auto& instance : instances) {
          result.random_next += instance.is_random_next ? 1 : 0;
          result.masked += instance.masked_positions.size();
        }
        write_pretraining_shard(output / result.file, instances, options.max_seq_length,
                                options.max_predictions);
        result.sha256 = sha256_file_hex(output / result.file);
        fs::remove(spills[s]);
        const std::lock_guard lock(progress_mutex);
        say(fmt::format("prep: wrote {} ({} instances, {} documents) [{}/{}]", result.file, result.instances,
                        result.documents, ++shards_done, results.size()));
      }
    } catch (...) {
      errors[thread] = std::current_exception();
      next_shard = results.size();  // stop the other workers early
    }
  };
  std::vector<std::thread> pool;
  for (int32_t t = 1; t < threads; ++t) pool.emplace_back(work, static_cast<size_t>(t));
  work(0);
  for (auto& thread : pool) thread.join();
  for (auto& error : errors)
    if (error) std::rethrow_exception(error);
  fs::remove_all(scratch);

  // Shards of an earlier run with more shards would be mistaken for this run's: remove them.
  for (const auto& entry : fs::directory_iterator(output)) {
    const std::string name = entry.path().filename().string();
    const bool ours =
        std::any_of(results.begin(), results.end(), [&](const ShardResult& r) { return r.file == name; });
    if (!ours && entry.path().extension() == ".hdf5" &&
        (name.rfind("training_", 0) == 0 || name.rfind("heldout_", 0) == 0))
      fs::remove(entry.path());
  }

  PrepSummary summary;
  summary.documents = report.documents;
  summary.duplicate_lines_removed = report.duplicate_lines_removed;
  nlohmann::json shard_list = nlohmann::json::array();
  for (const auto& r : results) {
    (r.split == "training" ? summary.training_instances : summary.heldout_instances) += r.instances;
    summary.shard_files.push_back((output / r.file).string());
    shard_list.push_back({{"file", r.file},
                          {"split", r.split},
                          {"documents", r.documents},
                          {"tokens", r.tokens},
                          {"instances", r.instances},
                          {"random_next", r.random_next},
                          {"masked_positions", r.masked},
                          {"sha256", r.sha256}});
  }
  nlohmann::json top = nlohmann::json::array();
  for (const auto& line : report.top_duplicates)
    top.push_back({{"occurrences", line.occurrences}, {"line", line.text}});
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  nlohmann::json manifest = {
      {"format", "loom-pretraining-shards"},
      {"format_version", 1},
      {"layout",
       "BERT create_pretraining_data.py HDF5: input_ids, input_mask, segment_ids, masked_lm_positions, "
       "masked_lm_ids, next_sentence_labels"},
      {"arguments", arguments_json(options, shards, threads)},
      {"vocab",
       {{"path", options.vocab}, {"sha256", sha256_file_hex(options.vocab)}, {"size", vocab.vocab_size}}},
      {"tokenizer", {{"component", options.tokenizer_component}, {"lower_case", tokenizer.lower_case()}}},
      {"input", {{"files", files.size()}, {"bytes", report.input_bytes}}},
      {"documents", {{"kept", report.documents}, {"empty_dropped", report.empty_documents}}},
      {"sentences", report.sentences},
      {"tokens", report.tokens},
      {"dedup",
       {{"enabled", options.dedup},
        {"lines_removed", report.duplicate_lines_removed},
        {"report", "duplicates.tsv"},
        {"most_repeated", top}}},
      {"instances", {{"training", summary.training_instances}, {"heldout", summary.heldout_instances}}},
      {"shards", shard_list},
      {"formatted_text", "formatted.txt"},
      {"elapsed_seconds", elapsed}};
  write_file_atomically(output / "manifest.json", manifest.dump(2) + "\n");
  say(fmt::format("prep: done in {:.1f} s: {} training + {} held-out instances → {}", elapsed,
                  summary.training_instances, summary.heldout_instances,
                  (output / "manifest.json").string()));
  return summary;
}

}  // namespace loom::host
