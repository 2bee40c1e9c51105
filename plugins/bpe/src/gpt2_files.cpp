// See gpt2_files.hpp.
#include "gpt2_files.hpp"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "loom/sdk/error.hpp"

namespace loom::bpe {

BpeConfig read_gpt2_files(const std::string& vocab_json, const std::string& merges_txt) {
  BpeConfig config;
  config.source = vocab_json + " + " + merges_txt;
  std::ifstream vocab_in(vocab_json, std::ios::binary);
  if (!vocab_in) throw loom::IoError(vocab_json + ": cannot read the vocabulary");
  nlohmann::json vocab;
  try {
    vocab = nlohmann::json::parse(vocab_in);
  } catch (const nlohmann::json::parse_error& e) {
    throw loom::IoError(vocab_json + ": not valid JSON (" + e.what() + ")");
  }
  if (!vocab.is_object()) throw loom::IoError(vocab_json + ": expected an object token → id");
  for (const auto& [token, id] : vocab.items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > INT32_MAX)
      throw loom::IoError(vocab_json + ": \"" + token + "\": expected an id between 0 and 2^31-1");
    config.vocabulary[token] = static_cast<int32_t>(id.get<int64_t>());
  }
  std::ifstream merges_in(merges_txt, std::ios::binary);
  if (!merges_in) throw loom::IoError(merges_txt + ": cannot read the merges");
  std::string line;
  for (size_t number = 1; std::getline(merges_in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (number == 1 && line.rfind("#version", 0) == 0) continue;
    if (line.empty()) continue;
    const size_t space = line.find(' ');
    if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos)
      throw loom::IoError(merges_txt + ":" + std::to_string(number) +
                          ": expected \"left right\" (two tokens and one space)");
    config.merges.emplace_back(line.substr(0, space), line.substr(space + 1));
  }
  if (auto it = config.vocabulary.find(std::string_view("<|endoftext|>")); it != config.vocabulary.end()) {
    AddedToken end_of_text;
    end_of_text.content = "<|endoftext|>";
    end_of_text.id = it->second;
    end_of_text.special = true;
    end_of_text.normalized = false;
    config.added_tokens.push_back(end_of_text);
  }
  return config;
}

}  // namespace loom::bpe
