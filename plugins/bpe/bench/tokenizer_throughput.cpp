// Encode throughput of a tokenizer component on one thread: every line of a file through
// loom::Tokenizer::tokenize (no template tokens), one warm-up pass, then the best of three timed
// passes (the word caches are warm, as in a long data preparation). Loads the component through
// the plugin registry, so tokenizer/bpe and tokenizer/wordpiece are measured the same way.
//
//   loom_tokenizer_bench PLUGIN_DIR LINES_FILE COMPONENT 'TOML options'
//   e.g. loom_tokenizer_bench build/lib/loom/plugins corpus.txt bpe 'vocab = "vocab.json"
//        merges = "merges.txt"'
// Prints one line: component, lines, bytes, tokens, seconds, lines/s, MB/s, tokens/s.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "loom/sdk/tokenizer.hpp"
#include "plugin_loading/plugin_registry.hpp"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s PLUGIN_DIR LINES_FILE COMPONENT 'TOML options'\n", argv[0]);
    return 2;
  }
  std::vector<std::string> lines;
  size_t bytes = 0;
  {
    std::ifstream in(argv[2], std::ios::binary);
    if (!in) {
      std::fprintf(stderr, "%s: cannot read\n", argv[2]);
      return 2;
    }
    for (std::string line; std::getline(in, line);) {
      bytes += line.size();
      lines.push_back(std::move(line));
    }
  }
  loom::host::PluginSearchOptions search;
  search.directories = {argv[1]};
  search.default_paths = false;
  search.environment = false;
  loom::host::PluginRegistry registry(search);
  const auto* entry = registry.find(LOOM_KIND_TOKENIZER, argv[3]);
  if (entry == nullptr) {
    std::fprintf(stderr, "tokenizer/%s not found in %s\n", argv[3], argv[1]);
    return 2;
  }
  auto tokenizer = registry.create<loom::Tokenizer>(*entry, {"tokenizer", argv[4], "", "bench"}, false);
  const loom::Tokenizer& t = *tokenizer.get();
  std::vector<int32_t> ids(1 << 16);
  size_t tokens = 0;
  const auto pass = [&] {
    tokens = 0;
    for (const std::string& line : lines) {
      if (ids.size() < line.size() + 2) ids.resize(line.size() + 2);
      tokens += t.tokenize(line.data(), line.size(), ids.data(), ids.size());
    }
  };
  pass();  // warm-up
  double best = 1e30;
  for (int i = 0; i < 3; ++i) {
    const auto start = std::chrono::steady_clock::now();
    pass();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::printf("%-10s lines %zu  bytes %zu  tokens %zu  %.3f s  %.0f lines/s  %.2f MB/s  %.2f M tokens/s\n", argv[3],
              lines.size(), bytes, tokens, best, static_cast<double>(lines.size()) / best,
              static_cast<double>(bytes) / best / 1e6, static_cast<double>(tokens) / best / 1e6);
  return 0;
}
