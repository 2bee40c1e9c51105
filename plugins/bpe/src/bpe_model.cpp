// See bpe_model.hpp.
#include "bpe_model.hpp"

#include <atomic>
#include <cstdio>
#include <algorithm>

#include "byte_level_alphabet.hpp"
#include "loom/sdk/error.hpp"

namespace loom::bpe {
namespace {

std::atomic<uint64_t> next_instance{1};

// Words already merged, per thread and model: a word's tokens depend on nothing else, and a corpus
// repeats its words. Bounded like Hugging Face's cache (it stops adding when full).
struct WordCache {
  static constexpr size_t kCapacity = 10000;
  static constexpr size_t kLongestWord = 256;
  uint64_t owner = 0;
  std::unordered_map<std::string, std::vector<WordPiece>, StringHash, std::equal_to<>> words;
};

WordCache& cache_of(uint64_t owner) {
  // A few models per thread; the least recently claimed slot is reused.
  thread_local WordCache caches[4];
  thread_local size_t next_slot = 0;
  for (WordCache& cache : caches)
    if (cache.owner == owner) return cache;
  WordCache& cache = caches[next_slot];
  next_slot = (next_slot + 1) % 4;
  cache.owner = owner;
  cache.words.clear();
  return cache;
}

struct Symbol {
  int32_t id;
  int32_t previous;
  int32_t next;
  uint32_t begin;
  uint32_t end;  // begin == end: merged into its left neighbour
};

struct QueuedMerge {
  uint32_t rank;
  uint32_t position;
  int32_t merged;
  // Heap order (a max-heap): "greater" is the lower rank, then the lower position.
  bool operator<(const QueuedMerge& other) const {
    return rank != other.rank ? rank > other.rank : position > other.position;
  }
};

}  // namespace

BpeModel::BpeModel(TokenIds vocabulary, const std::vector<std::pair<std::string, std::string>>& merges,
                   BpeModelOptions options, const std::string& source)
    : vocabulary_(std::move(vocabulary)), options_(std::move(options)), instance_(next_instance++) {
  const auto id_of = [&](std::string_view spelling) {
    auto it = vocabulary_.find(spelling);
    return it == vocabulary_.end() ? -1 : it->second;
  };
  if (options_.unk_token) {
    unk_id_ = id_of(*options_.unk_token);
    if (unk_id_ < 0)
      throw loom::ConfigError(source + ": unk_token '" + *options_.unk_token +
                              "' is not in the vocabulary; add it or set unk_token to null");
  }
  const ByteLevelAlphabet& alphabet = ByteLevelAlphabet::instance();
  const std::string& prefix = options_.continuing_subword_prefix;
  const std::string& suffix = options_.end_of_word_suffix;
  for (int b = 0; b < 256; ++b) {
    const std::string& c = alphabet.spelling(static_cast<unsigned char>(b));
    first_[b] = id_of(c);
    middle_[b] = id_of(prefix + c);
    last_[b] = id_of(prefix + c + suffix);
    only_[b] = id_of(c + suffix);
  }
  const size_t prefix_length = prefix.size();
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    const auto& [left, right] = merges[rank];
    const int32_t a = id_of(left), b = id_of(right);
    const std::string line = source + ": merge " + std::to_string(rank + 1) + " (\"" + left + "\" \"" + right + "\")";
    if (a < 0 || b < 0)
      throw loom::ConfigError(line + ": \"" + (a < 0 ? left : right) +
                              "\" is not in the vocabulary; every merge's tokens must be");
    if (right.size() < prefix_length)
      throw loom::ConfigError(line + ": the right token is shorter than continuing_subword_prefix");
    const std::string merged_spelling = left + right.substr(prefix_length);
    const int32_t merged = id_of(merged_spelling);
    if (merged < 0)
      throw loom::ConfigError(line + ": the merged token \"" + merged_spelling +
                              "\" is not in the vocabulary; every merge's result must be");
    merges_.set(a, b, Merge{static_cast<uint32_t>(rank), merged});
  }
  if (options_.ignore_merges)
    for (const auto& [spelling, id] : vocabulary_)
      if (auto bytes = alphabet.to_bytes(spelling)) raw_vocabulary_.emplace(std::move(*bytes), id);
}

BpeModel::~BpeModel() = default;

void BpeModel::tokenize_word(std::string_view word, std::vector<WordPiece>& out) const {
  if (options_.ignore_merges) {
    if (auto it = raw_vocabulary_.find(word); it != raw_vocabulary_.end()) {
      out.push_back(WordPiece{it->second, 0, static_cast<uint32_t>(word.size())});
      return;
    }
  }
  if (word.size() > WordCache::kLongestWord) {
    merge_word(word, out);
    return;
  }
  WordCache& cache = cache_of(instance_);
  if (auto it = cache.words.find(word); it != cache.words.end()) {
    out.insert(out.end(), it->second.begin(), it->second.end());
    return;
  }
  const size_t start = out.size();
  merge_word(word, out);
  if (cache.words.size() < WordCache::kCapacity)
    cache.words.emplace(std::string(word), std::vector<WordPiece>(out.begin() + static_cast<ptrdiff_t>(start), out.end()));
}

void BpeModel::merge_word(std::string_view word, std::vector<WordPiece>& out) const {
  thread_local std::vector<Symbol> symbols;
  thread_local std::vector<QueuedMerge> heap_storage;
  symbols.clear();
  const size_t n = word.size();
  const auto add = [&](int32_t id, uint32_t begin, uint32_t end) {
    const auto index = static_cast<int32_t>(symbols.size());
    symbols.push_back(Symbol{id, index - 1, index + 1, begin, end});
  };
  // Initial symbols, one per byte, with Hugging Face's unknown-character handling: a pending
  // [UNK] is written before the next known symbol (byte-fallback tokens do not flush it).
  bool unk_pending = false;  // a pending [UNK] over bytes [unk_begin, unk_end)
  uint32_t unk_begin = 0, unk_end = 0;
  for (size_t i = 0; i < n; ++i) {
    const auto b = static_cast<unsigned char>(word[i]);
    const int32_t id = n == 1 ? only_[b] : i == 0 ? first_[b] : i + 1 == n ? last_[b] : middle_[b];
    const auto begin = static_cast<uint32_t>(i), end = static_cast<uint32_t>(i + 1);
    if (id >= 0) {
      if (unk_pending) add(unk_id_, unk_begin, unk_end), unk_pending = false;
      add(id, begin, end);
      continue;
    }
    if (options_.byte_fallback) {
      // <0xXX> for each UTF-8 byte of the symbol's spelling (prefix and suffix included).
      std::string spelling = ByteLevelAlphabet::instance().spelling(b);
      if (i > 0) spelling = options_.continuing_subword_prefix + spelling;
      if (i + 1 == n) spelling += options_.end_of_word_suffix;
      std::vector<int32_t> ids;
      for (unsigned char byte : spelling) {
        char code[8];
        std::snprintf(code, sizeof code, "<0x%02X>", byte);
        auto it = vocabulary_.find(std::string_view(code));
        if (it == vocabulary_.end()) break;
        ids.push_back(it->second);
      }
      if (ids.size() == spelling.size()) {
        for (int32_t fallback : ids) add(fallback, begin, end);
        continue;
      }
    }
    if (unk_id_ < 0) continue;  // no unk_token: Hugging Face drops the character
    if (unk_pending && options_.fuse_unk) {
      unk_end = end;
    } else {
      if (unk_pending) add(unk_id_, unk_begin, unk_end);
      unk_pending = true, unk_begin = begin, unk_end = end;
    }
  }
  if (unk_pending) add(unk_id_, unk_begin, unk_end);
  if (symbols.empty()) return;
  symbols.back().next = -1;
  const auto count = static_cast<int32_t>(symbols.size());

  // A max-heap under QueuedMerge's order (the lowest rank, then position, on top), kept in a
  // per-thread vector so a word costs no allocation.
  std::vector<QueuedMerge>& queue = heap_storage;
  queue.clear();
  const auto push = [&](QueuedMerge m) {
    queue.push_back(m);
    std::push_heap(queue.begin(), queue.end());
  };
  for (int32_t i = 0; i + 1 < count; ++i)
    if (const Merge* m = merges_.find(symbols[i].id, symbols[i + 1].id))
      push(QueuedMerge{m->rank, static_cast<uint32_t>(i), m->merged});
  while (!queue.empty()) {
    std::pop_heap(queue.begin(), queue.end());
    const QueuedMerge top = queue.back();
    queue.pop_back();
    Symbol& left = symbols[top.position];
    if (left.begin == left.end || left.next < 0) continue;
    const int32_t right_index = left.next;
    const Symbol right = symbols[static_cast<size_t>(right_index)];
    const Merge* still = merges_.find(left.id, right.id);
    if (still == nullptr || still->merged != top.merged) continue;  // a stale entry
    left.id = top.merged;
    left.end = right.end;
    left.next = right.next;
    symbols[static_cast<size_t>(right_index)].end = symbols[static_cast<size_t>(right_index)].begin;
    if (right.next >= 0) symbols[static_cast<size_t>(right.next)].previous = static_cast<int32_t>(top.position);
    if (left.previous >= 0)
      if (const Merge* m = merges_.find(symbols[static_cast<size_t>(left.previous)].id, left.id))
        push(QueuedMerge{m->rank, static_cast<uint32_t>(left.previous), m->merged});
    if (left.next >= 0)
      if (const Merge* m = merges_.find(left.id, symbols[static_cast<size_t>(left.next)].id))
        push(QueuedMerge{m->rank, top.position, m->merged});
  }
  for (const Symbol& s : symbols)
    if (s.begin != s.end) out.push_back(WordPiece{s.id, s.begin, s.end});
}

}  // namespace loom::bpe
