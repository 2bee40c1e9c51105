// See bpe_trainer.hpp.
#include "prep/bpe_trainer.hpp"

#include <algorithm>
#include <map>
#include <memory>
#include <queue>
#include <unordered_map>

namespace loom::host {
namespace {

void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

// The code points of valid UTF-8 `text` (words come from the tokenizer, so they are valid).
std::vector<char32_t> code_points(std::string_view text) {
  std::vector<char32_t> out;
  for (size_t i = 0; i < text.size();) {
    const auto lead = static_cast<unsigned char>(text[i]);
    const size_t n = lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
    char32_t c = n == 1 ? lead : n == 2 ? (lead & 0x1F) : n == 3 ? (lead & 0x0F) : (lead & 0x07);
    for (size_t k = 1; k < n && i + k < text.size(); ++k) c = (c << 6) | (static_cast<unsigned char>(text[i + k]) & 0x3F);
    out.push_back(c);
    i += n;
  }
  return out;
}

using Pair = std::pair<uint32_t, uint32_t>;
uint64_t key_of(Pair p) { return (uint64_t{p.first} << 32) | p.second; }

// A queued merge candidate: the pair, its count when queued, and the words that had it.
struct Candidate {
  uint64_t count;
  Pair pair;
  std::shared_ptr<std::vector<uint32_t>> words;
};

// Highest count on top; among equal counts the lower pair.
struct CandidateOrder {
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.count != b.count ? a.count < b.count : a.pair > b.pair;
  }
};

// One occurrence-merging pass over `symbols` as `tokenizers`' Word::merge: each (left, right)
// found left to right becomes `merged`; the pair-count changes go to `change(pair, delta)`.
template <typename Change>
void merge_word(std::vector<uint32_t>& symbols, Pair pair, uint32_t merged, Change&& change) {
  for (size_t i = 0; i < symbols.size(); ++i) {
    if (symbols[i] != pair.first || i + 1 >= symbols.size() || symbols[i + 1] != pair.second) continue;
    if (i > 0) {
      change(Pair{symbols[i - 1], pair.first}, -1);
      change(Pair{symbols[i - 1], merged}, 1);
    }
    symbols[i] = merged;
    symbols.erase(symbols.begin() + static_cast<ptrdiff_t>(i) + 1);
    if (i + 1 < symbols.size()) {
      change(Pair{pair.second, symbols[i + 1]}, -1);
      change(Pair{merged, symbols[i + 1]}, 1);
    }
  }
}

}  // namespace

std::vector<std::string> byte_level_alphabet() {
  std::vector<std::string> out(256);
  char32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    append_utf8(out[static_cast<size_t>(b)], printable ? static_cast<char32_t>(b) : next++);
  }
  return out;
}

BpeTrainingResult learn_bpe(const WordCounts& counts, const BpeTrainingOptions& options) {
  BpeTrainingResult result;
  std::unordered_map<std::string, uint32_t> ids;
  const auto add_token = [&](const std::string& token) {
    if (ids.count(token) != 0) return;
    ids.emplace(token, static_cast<uint32_t>(result.vocabulary.size()));
    result.vocabulary.push_back(token);
  };
  for (const std::string& special : options.special_tokens) add_token(special);

  // The alphabet in code-point order.
  std::vector<std::pair<std::string, uint64_t>> words(counts.begin(), counts.end());
  std::sort(words.begin(), words.end());  // a fixed order of words (results do not depend on it)
  std::map<char32_t, bool> alphabet;
  std::vector<std::vector<char32_t>> characters;
  characters.reserve(words.size());
  for (const auto& [word, count] : words) {
    characters.push_back(code_points(word));
    for (char32_t c : characters.back()) alphabet[c] = true;
  }
  for (const std::string& c : options.initial_alphabet)
    for (char32_t cp : code_points(c)) alphabet[cp] = true;
  const size_t before_alphabet = result.vocabulary.size();
  for (const auto& [c, unused] : alphabet) {
    std::string spelled;
    append_utf8(spelled, c);
    add_token(spelled);
  }
  result.alphabet = result.vocabulary.size() - before_alphabet;

  // Words as symbol ids; pair counts and where each pair occurs.
  std::vector<std::vector<uint32_t>> symbols(words.size());
  std::unordered_map<uint64_t, int64_t> pair_counts;
  std::unordered_map<uint64_t, std::vector<uint32_t>> where;
  for (size_t w = 0; w < words.size(); ++w) {
    for (char32_t c : characters[w]) {
      std::string spelled;
      append_utf8(spelled, c);
      symbols[w].push_back(ids.at(spelled));
    }
    for (size_t i = 0; i + 1 < symbols[w].size(); ++i) {
      const uint64_t key = key_of(Pair{symbols[w][i], symbols[w][i + 1]});
      pair_counts[key] += static_cast<int64_t>(words[w].second);
      auto& list = where[key];
      if (list.empty() || list.back() != w) list.push_back(static_cast<uint32_t>(w));
    }
  }
  std::priority_queue<Candidate, std::vector<Candidate>, CandidateOrder> queue;
  const auto queue_updates = [&]() {
    for (auto& [key, list] : where) {
      const int64_t count = pair_counts[key];
      if (count <= 0) continue;
      std::sort(list.begin(), list.end());
      list.erase(std::unique(list.begin(), list.end()), list.end());
      queue.push(Candidate{static_cast<uint64_t>(count), Pair{static_cast<uint32_t>(key >> 32), static_cast<uint32_t>(key)},
                           std::make_shared<std::vector<uint32_t>>(std::move(list))});
    }
    where.clear();
  };
  queue_updates();

  while (result.vocabulary.size() < options.vocab_size && !queue.empty()) {
    Candidate top = queue.top();
    queue.pop();
    const int64_t now = pair_counts[key_of(top.pair)];
    if (top.count != static_cast<uint64_t>(now)) {  // counted before other merges changed it
      top.count = static_cast<uint64_t>(now);
      queue.push(std::move(top));
      continue;
    }
    if (top.count < 1 || top.count < options.min_frequency) break;
    const std::string merged_token = result.vocabulary[top.pair.first] + result.vocabulary[top.pair.second];
    add_token(merged_token);
    const uint32_t merged = ids.at(merged_token);
    result.merges.emplace_back(result.vocabulary[top.pair.first], result.vocabulary[top.pair.second]);
    for (uint32_t w : *top.words) {
      merge_word(symbols[w], top.pair, merged, [&](Pair p, int delta) {
        pair_counts[key_of(p)] += delta * static_cast<int64_t>(words[w].second);
        if (delta > 0) where[key_of(p)].push_back(w);
      });
    }
    queue_updates();
  }
  return result;
}

}  // namespace loom::host
