// Vocabulary loading and lookup; see vocabulary.hpp for the contract.
#include "vocabulary.hpp"

#include <fstream>

#include "loom/sdk/error.hpp"

namespace loom::wordpiece {
namespace {

bool is_continuation_text(const std::string& token) {
  return token.size() > 2 && token[0] == '#' && token[1] == '#';
}

}  // namespace

Vocabulary Vocabulary::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw loom::IoError(path + ": cannot open the vocabulary file (one token per line)");
  std::vector<std::string> tokens;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    tokens.push_back(line);
  }
  if (in.bad()) throw loom::IoError(path + ": read error");
  if (tokens.empty()) throw loom::IoError(path + ": the vocabulary file is empty");
  return from_tokens(std::move(tokens));
}

Vocabulary Vocabulary::from_tokens(std::vector<std::string> tokens) {
  Vocabulary v;
  v.tokens_ = std::move(tokens);
  v.initial_.build(v.tokens_, false);
  v.continuation_.build(v.tokens_, true);
  return v;
}

const char* Vocabulary::token(int32_t id) const {
  if (id < 0 || id >= size()) return nullptr;
  return tokens_[static_cast<size_t>(id)].c_str();
}

int32_t Vocabulary::find(std::string_view token) const {
  if (token.size() > 2 && token[0] == '#' && token[1] == '#') {
    const int32_t id = continuation_.find(token.substr(2), tokens_);
    if (id >= 0) return id;
  }
  return initial_.find(token, tokens_);
}

bool Vocabulary::is_continuation(int32_t id) const {
  return id >= 0 && id < size() && is_continuation_text(tokens_[static_cast<size_t>(id)]);
}

std::string_view Vocabulary::Table::key_of(int32_t id, const std::vector<std::string>& tokens) const {
  std::string_view text = tokens[static_cast<size_t>(id)];
  return continuation ? text.substr(2) : text;
}

void Vocabulary::Table::build(const std::vector<std::string>& tokens, bool continuations) {
  continuation = continuations;
  size_t capacity = 16;
  while (capacity < tokens.size() * 2) capacity *= 2;
  slots.assign(capacity, 0);
  hashes.assign(capacity, 0);
  for (size_t id = 0; id < tokens.size(); ++id) {
    // "##x" tokens are continuations; every other token (including "##" itself) is word-initial.
    if (is_continuation_text(tokens[id]) != continuations) continue;
    const std::string_view key = key_of(static_cast<int32_t>(id), tokens);
    const uint64_t h = hash_piece(key);
    size_t slot = h & (capacity - 1);
    for (;; slot = (slot + 1) & (capacity - 1)) {
      if (slots[slot] == 0) break;
      if (hashes[slot] == h && key_of(slots[slot] - 1, tokens) == key) break;  // later id wins
    }
    slots[slot] = static_cast<int32_t>(id) + 1;
    hashes[slot] = h;
    if (key.size() > longest) longest = key.size();
  }
}

int32_t Vocabulary::Table::find(std::string_view key, const std::vector<std::string>& tokens) const {
  const uint64_t h = hash_piece(key);
  const size_t mask = slots.size() - 1;
  for (size_t slot = h & mask;; slot = (slot + 1) & mask) {
    const int32_t entry = slots[slot];
    if (entry == 0) return -1;
    if (hashes[slot] == h && key_of(entry - 1, tokens) == key) return entry - 1;
  }
}

}  // namespace loom::wordpiece
