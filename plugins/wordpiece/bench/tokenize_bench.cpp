// Throughput of tokenizer/wordpiece on one core (Google Benchmark): bytes of UTF-8 text per second
// through tokenize() (the `loom tokenize` / `loom prep` path) and encode() of pairs.
// Text: the files named by LOOM_BENCH_TEXT (colon-separated), else the corpora scripts/fetch-data
// puts under data/raw; each file's lines are tokenized one call per line. Run via scripts/bench/tokenizer.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "wordpiece_tokenizer.hpp"

namespace {

using loom::wordpiece::Vocabulary;
using loom::wordpiece::WordpieceSettings;
using loom::wordpiece::WordpieceTokenizer;

std::string env_or(const char* name, const std::string& fallback) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : fallback;
}

std::vector<std::string> load_lines() {
  namespace fs = std::filesystem;
  std::vector<std::string> files;
  std::stringstream list(env_or("LOOM_BENCH_TEXT", ""));
  for (std::string f; std::getline(list, f, ':');)
    if (!f.empty()) files.push_back(f);
  if (files.empty()) {
    const fs::path raw = env_or("LOOM_DATA", "data") + "/raw";
    if (fs::exists(raw))
      for (const auto& entry : fs::recursive_directory_iterator(raw))
        if (entry.is_regular_file()) files.push_back(entry.path().string());
  }
  std::vector<std::string> lines;
  for (const auto& f : files) {
    std::ifstream in(f);
    for (std::string line; std::getline(in, line);)
      if (!line.empty()) lines.push_back(line);
  }
  if (lines.empty()) {
    std::cerr << "no text: run scripts/fetch-data or set LOOM_BENCH_TEXT\n";
    std::exit(2);
  }
  return lines;
}

const WordpieceTokenizer& tokenizer(bool cased) {
  static const Vocabulary vocabulary =
      Vocabulary::load(env_or("LOOM_BENCH_VOCAB", "data/vocab/bert-base-uncased.txt"));
  auto make = [&](bool c) {
    WordpieceSettings settings;
    settings.basic.lower_case = !c;
    settings.basic.strip_accents = !c;
    return std::make_unique<WordpieceTokenizer>(settings, vocabulary);
  };
  static const auto uncased = make(false);
  static const auto cased_tokenizer = make(true);
  return cased ? *cased_tokenizer : *uncased;
}

const std::vector<std::string>& lines() {
  static const std::vector<std::string> all = load_lines();
  return all;
}

void BM_Tokenize(benchmark::State& state) {
  const WordpieceTokenizer& t = tokenizer(state.range(0) != 0);
  std::vector<int32_t> ids(1 << 16);
  size_t bytes = 0, tokens = 0;
  for (auto _ : state) {
    for (const std::string& line : lines()) {
      if (ids.size() < line.size() + 1) ids.resize(line.size() + 1);
      tokens += t.tokenize(line.data(), line.size(), ids.data(), ids.size());
      bytes += line.size();
    }
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(tokens), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Tokenize)->Arg(0)->ArgName("cased")->Unit(benchmark::kMillisecond)->MinTime(2.0);
BENCHMARK(BM_Tokenize)->Arg(1)->ArgName("cased")->Unit(benchmark::kMillisecond)->MinTime(2.0);

void BM_EncodePairs(benchmark::State& state) {
  const WordpieceTokenizer& t = tokenizer(false);
  std::vector<int32_t> ids(128), types(128), mask(128);
  const loom::EncodedBuffers out{ids.data(), types.data(), mask.data(), 128};
  loom::EncodeOptions options;
  options.max_length = 128;
  options.pad_to_max_length = true;
  size_t bytes = 0;
  const auto& all = lines();
  for (auto _ : state) {
    for (size_t i = 0; i + 1 < all.size(); i += 2) {
      t.encode(all[i].data(), all[i].size(), all[i + 1].data(), all[i + 1].size(), options, out);
      bytes += all[i].size() + all[i + 1].size();
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
}
BENCHMARK(BM_EncodePairs)->Unit(benchmark::kMillisecond)->MinTime(2.0);

}  // namespace

BENCHMARK_MAIN();
