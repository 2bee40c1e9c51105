// Stage 1 of prep: see corpus_formatter.hpp.
#include "prep/corpus_formatter.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <fstream>
#include <memory>
#include <span>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>

#include "files/file_writer.hpp"
#include "prep/sentence_splitter.hpp"

namespace fs = std::filesystem;

namespace loom::host {
namespace {

constexpr size_t kWindowDocuments = 64;

struct Sentence {
  std::string text;
  uint64_t hash = 0;
  std::vector<int32_t> ids;
};

struct Document {
  std::vector<Sentence> sentences;
};

// FNV-1a 64: a stable hash (unlike std::hash, fixed across builds) for de-duplication and the
// held-out draw.
uint64_t fnv1a(std::string_view text, uint64_t hash = 0xcbf29ce484222325ull) {
  for (unsigned char c : text) hash = (hash ^ c) * 0x100000001b3ull;
  return hash;
}

// SplitMix64 finaliser: turns (seed, document index) into a uniform 64-bit value.
uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path.string() + ": cannot open input file");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw std::runtime_error(path.string() + ": read error");
  return text;
}

// Streams documents from files in the reference's format: one sentence per line (trimmed), blank
// lines (and file ends) between documents. Holds one document at a time.
class SentenceFileReader {
 public:
  explicit SentenceFileReader(const std::vector<fs::path>& files) : files_(files) {}
  /// Files fully read so far.
  size_t files_done() const { return file_index_; }
  /// The next non-empty document; false when every file is exhausted.
  bool next(Document& document) {
    document.sentences.clear();
    std::string line;
    while (file_index_ < files_.size()) {
      if (!in_.is_open()) {
        in_.open(files_[file_index_], std::ios::binary);
        if (!in_) throw std::runtime_error(files_[file_index_].string() + ": cannot open input file");
      }
      if (!std::getline(in_, line)) {
        if (in_.bad()) throw std::runtime_error(files_[file_index_].string() + ": read error");
        in_.close();
        ++file_index_;
        if (!document.sentences.empty()) return true;
        continue;
      }
      const size_t first = line.find_first_not_of(" \t\r\f\v");
      if (first == std::string::npos) {
        if (!document.sentences.empty()) return true;
        continue;
      }
      const size_t last = line.find_last_not_of(" \t\r\f\v");
      document.sentences.push_back(Sentence{line.substr(first, last - first + 1), 0, {}});
    }
    return !document.sentences.empty();
  }

 private:
  const std::vector<fs::path>& files_;
  size_t file_index_ = 0;
  std::ifstream in_;
};

void tokenize_document(Document& document, const loom::Tokenizer& tokenizer) {
  for (Sentence& sentence : document.sentences) {
    sentence.hash = fnv1a(sentence.text);
    sentence.ids.resize(sentence.text.size() + 1);
    size_t needed = tokenizer.tokenize(sentence.text.data(), sentence.text.size(), sentence.ids.data(),
                                       sentence.ids.size());
    if (needed > sentence.ids.size()) {
      sentence.ids.resize(needed);
      needed = tokenizer.tokenize(sentence.text.data(), sentence.text.size(), sentence.ids.data(),
                                  sentence.ids.size());
    }
    sentence.ids.resize(needed);
  }
}

template <typename T>
void write_values(FileWriter& file, const T* values, size_t count) {
  file.write(std::as_bytes(std::span<const T>(values, count)));
}

void write_spill_document(FileWriter& spill, const std::vector<const std::vector<int32_t>*>& sentences) {
  const auto count = static_cast<uint32_t>(sentences.size());
  write_values(spill, &count, 1);
  for (const auto* ids : sentences) {
    const auto length = static_cast<uint32_t>(ids->size());
    write_values(spill, &length, 1);
    write_values(spill, ids->data(), ids->size());
  }
}

using FilePointer = std::unique_ptr<FILE, int (*)(FILE*)>;

}  // namespace

FormattingReport format_corpus(const std::vector<fs::path>& files, const FormatterOptions& options,
                               const loom::Tokenizer& tokenizer, const fs::path& formatted_path,
                               const fs::path& duplicates_path, const std::vector<fs::path>& spills,
                               const std::function<void(const std::string&)>& progress) {
  if (spills.size() < 2) throw std::logic_error("format_corpus: needs a training and a held-out spill");
  const auto start = std::chrono::steady_clock::now();
  FormattingReport report;
  report.spill_documents.assign(spills.size(), 0);
  report.spill_tokens.assign(spills.size(), 0);
  for (const auto& file : files) report.input_bytes += fs::file_size(file);

  // Every write checked through the close (FileWriter); a file appears only when complete.
  FileWriter formatted(formatted_path);
  std::vector<std::unique_ptr<FileWriter>> spill_files;
  spill_files.reserve(spills.size());
  for (const auto& path : spills) spill_files.push_back(std::make_unique<FileWriter>(path));
  const size_t training_spills = spills.size() - 1;

  std::unordered_map<uint64_t, uint32_t> seen;         // sentence hash → occurrences
  std::unordered_map<uint64_t, std::string> repeated;  // text of lines seen more than once
  uint64_t document_index = 0;
  uint64_t bytes_done = 0;
  size_t file_index = 0;
  auto last_report = start;

  // Raw format: one file per document, read in the worker. Sentences format: documents streamed
  // from the files here, a window at a time.
  SentenceFileReader sentence_reader(files);
  const bool raw = options.input_format == "raw";
  while (raw ? file_index < files.size() : sentence_reader.files_done() < files.size()) {
    std::vector<Document> window;
    const size_t first_file = file_index;
    if (raw) {
      const size_t count = std::min(kWindowDocuments, files.size() - file_index);
      window.resize(count);
      file_index += count;
    } else {
      Document document;
      while (window.size() < kWindowDocuments && sentence_reader.next(document))
        window.push_back(std::move(document));
      file_index = sentence_reader.files_done();
    }
    // Workers: document d of the window is handled by thread d % threads.
    const size_t threads = std::max<size_t>(1, std::min<size_t>(options.threads, window.size()));
    std::vector<std::exception_ptr> errors(threads);
    auto work = [&](size_t thread) {
      try {
        for (size_t d = thread; d < window.size(); d += threads) {
          if (raw)
            for (auto& text : split_sentences(read_file(files[first_file + d])))
              window[d].sentences.push_back(Sentence{std::move(text), 0, {}});
          tokenize_document(window[d], tokenizer);
        }
      } catch (...) {
        errors[thread] = std::current_exception();
      }
    };
    std::vector<std::thread> pool;
    for (size_t t = 1; t < threads; ++t) pool.emplace_back(work, t);
    work(0);
    for (auto& thread : pool) thread.join();
    for (auto& error : errors)
      if (error) std::rethrow_exception(error);

    // Consume in input order: de-duplicate, write formatted text, route to a spill.
    for (Document& document : window) {
      std::vector<const std::vector<int32_t>*> kept;
      uint64_t tokens = 0;
      for (Sentence& sentence : document.sentences) {
        bytes_done += sentence.text.size() + 1;
        if (options.dedup) {
          uint32_t& occurrences = seen[sentence.hash];
          if (++occurrences > 1) {
            ++report.duplicate_lines_removed;
            repeated.try_emplace(sentence.hash, sentence.text);
            continue;
          }
        }
        if (sentence.ids.empty()) continue;  // nothing left after cleaning (the reference's `if tokens`)
        if (kept.empty() && report.documents > 0) formatted.write("\n");
        formatted.write(sentence.text);
        formatted.write("\n");
        kept.push_back(&sentence.ids);
        tokens += sentence.ids.size();
      }
      const uint64_t index = document_index++;
      if (kept.empty()) {
        ++report.empty_documents;
        continue;
      }
      ++report.documents;
      report.sentences += kept.size();
      report.tokens += tokens;
      size_t target = training_spills;  // held out
      const double draw = static_cast<double>(mix(options.seed ^ mix(index)) >> 11) * 0x1.0p-53;
      if (draw >= options.heldout_fraction) {
        target = 0;
        for (size_t s = 1; s < training_spills; ++s)
          if (report.spill_tokens[s] < report.spill_tokens[target]) target = s;
      }
      write_spill_document(*spill_files[target], kept);
      report.spill_documents[target] += 1;
      report.spill_tokens[target] += tokens;
    }
    const auto now = std::chrono::steady_clock::now();
    if (progress && (now - last_report > std::chrono::seconds(2) || file_index == files.size())) {
      last_report = now;
      progress(fmt::format("prep: formatted {}/{} files, {} documents, {} sentences, {} tokens, {:.1f} s",
                           file_index, files.size(), report.documents, report.sentences, report.tokens,
                           std::chrono::duration<double>(now - start).count()));
    }
  }
  formatted.commit();
  for (const auto& spill : spill_files) spill->commit();

  // Duplicate report: every repeated line, most occurrences first.
  std::vector<DuplicateLine> duplicates;
  duplicates.reserve(repeated.size());
  for (auto& [hash, text] : repeated) duplicates.push_back(DuplicateLine{std::move(text), seen[hash]});
  std::sort(duplicates.begin(), duplicates.end(), [](const DuplicateLine& a, const DuplicateLine& b) {
    return a.occurrences != b.occurrences ? a.occurrences > b.occurrences : a.text < b.text;
  });
  FileWriter report_file(duplicates_path);
  report_file.write("occurrences\tline\n");
  for (const auto& line : duplicates) report_file.write(fmt::format("{}\t{}\n", line.occurrences, line.text));
  report_file.commit();
  duplicates.resize(std::min<size_t>(duplicates.size(), 20));
  report.top_duplicates = std::move(duplicates);
  return report;
}

std::vector<TokenizedDocument> read_spill(const fs::path& path) {
  FilePointer file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) throw std::runtime_error(path.string() + ": cannot open spill file");
  std::vector<TokenizedDocument> documents;
  uint32_t count = 0;
  while (std::fread(&count, sizeof count, 1, file.get()) == 1) {
    TokenizedDocument document(count);
    for (auto& sentence : document) {
      uint32_t length = 0;
      if (std::fread(&length, sizeof length, 1, file.get()) != 1)
        throw std::runtime_error(path.string() + ": truncated spill file");
      sentence.resize(length);
      if (std::fread(sentence.data(), sizeof(int32_t), length, file.get()) != length)
        throw std::runtime_error(path.string() + ": truncated spill file");
    }
    documents.push_back(std::move(document));
  }
  return documents;
}

}  // namespace loom::host
