// Reads tests/fixtures/bpe/expected-*.jsonl.gz: one Hugging Face `tokenizers` encode per line.
#pragma once

#include <zlib.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace loom::bpe::testing {

struct ExpectedEncoding {
  std::string a;
  std::optional<std::string> b;
  bool special = false;  ///< with the post-processor's template
  std::vector<int32_t> ids, type_ids;
  std::vector<std::pair<uint32_t, uint32_t>> offsets;  ///< code points
};

inline std::string fixture_path(const std::string& name) { return std::string(BPE_FIXTURES) + "/" + name; }

inline std::vector<ExpectedEncoding> read_expected(const std::string& name) {
  const std::string path = fixture_path(name);
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) throw std::runtime_error(path + ": cannot open");
  std::string text;
  char block[1 << 16];
  for (int n; (n = gzread(file, block, sizeof block)) > 0;) text.append(block, static_cast<size_t>(n));
  gzclose(file);
  std::vector<ExpectedEncoding> out;
  size_t start = 0;
  for (size_t end; (end = text.find('\n', start)) != std::string::npos; start = end + 1) {
    const auto j = nlohmann::json::parse(text.substr(start, end - start));
    ExpectedEncoding e;
    e.a = j["a"].get<std::string>();
    if (!j["b"].is_null()) e.b = j["b"].get<std::string>();
    e.special = j["special"].get<bool>();
    e.ids = j["ids"].get<std::vector<int32_t>>();
    e.type_ids = j["type_ids"].get<std::vector<int32_t>>();
    for (const auto& o : j["offsets"]) e.offsets.emplace_back(o[0].get<uint32_t>(), o[1].get<uint32_t>());
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace loom::bpe::testing
