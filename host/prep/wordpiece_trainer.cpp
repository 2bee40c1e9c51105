// WordPiece vocabulary learning; see wordpiece_trainer.hpp and
// docs/decisions/wordpiece-vocab-training.md.
#include "prep/wordpiece_trainer.hpp"

#include <algorithm>
#include <queue>
#include <stdexcept>
#include <string_view>
#include <unordered_set>

#include <fmt/format.h>

#include "recipe/errors.hpp"

namespace loom::host {
namespace {

constexpr std::string_view kContinuation = "##";

struct Word {
  std::vector<int32_t> symbols;
  uint64_t count;
  uint64_t stamp = 0;  // last merge that touched it (dedupes pair_words entries)
};

uint64_t pair_key(int32_t a, int32_t b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

size_t utf8_length(unsigned char lead) {
  return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

// One candidate in the heap; a stale count is detected against `Learner::pair_counts`.
struct Candidate {
  uint64_t count;
  uint64_t pair;
  bool operator<(const Candidate& other) const {  // max-heap: higher count, then older symbols
    if (count != other.count) return count < other.count;
    return pair > other.pair;
  }
};

class Learner {
 public:
  Learner(const WordCounts& counts, uint64_t min_frequency) : min_frequency_(min_frequency) {
    std::vector<std::pair<std::string_view, uint64_t>> sorted(counts.begin(), counts.end());
    std::sort(sorted.begin(), sorted.end());  // deterministic symbol ids whatever the hash order
    std::vector<std::vector<std::string>> spelled;
    std::vector<std::string> initial, inner;
    for (const auto& [text, count] : sorted) {
      std::vector<std::string> characters;
      for (size_t i = 0; i < text.size();) {
        const size_t n = std::min(utf8_length(static_cast<unsigned char>(text[i])), text.size() - i);
        std::string symbol;
        if (i > 0) symbol.assign(kContinuation.data(), kContinuation.size());
        symbol.append(text.data() + i, n);
        characters.push_back(std::move(symbol));
        (i == 0 ? initial : inner).push_back(characters.back());
        i += n;
      }
      spelled.push_back(std::move(characters));
      words_.push_back(Word{{}, count});
    }
    for (auto* alphabet : {&initial, &inner}) {
      std::sort(alphabet->begin(), alphabet->end());
      alphabet->erase(std::unique(alphabet->begin(), alphabet->end()), alphabet->end());
      for (const auto& symbol : *alphabet) add_symbol(symbol);
    }
    alphabet_size_ = symbols_.size();
    for (size_t w = 0; w < words_.size(); ++w) {
      for (const auto& character : spelled[w]) words_[w].symbols.push_back(ids_.at(character));
      add_pairs(static_cast<uint32_t>(w), +1);
    }
    for (const auto& [pair, count] : pair_counts_) heap_.push(Candidate{count, pair});
  }

  size_t alphabet_size() const { return alphabet_size_; }
  const std::vector<std::string>& symbols() const { return symbols_; }

  /// Performs the best merge; false when no pair reaches min_frequency.
  bool merge_best() {
    while (!heap_.empty()) {
      const Candidate top = heap_.top();
      heap_.pop();
      const auto found = pair_counts_.find(top.pair);
      const uint64_t current = found == pair_counts_.end() ? 0 : found->second;
      if (current != top.count) {
        if (current > 0 && current < top.count) heap_.push(Candidate{current, top.pair});
        continue;  // stale; a fresher entry exists or was just pushed
      }
      if (current < min_frequency_ || current == 0) return false;
      apply(top.pair);
      return true;
    }
    return false;
  }

 private:
  int32_t add_symbol(const std::string& text) {
    const auto [it, inserted] = ids_.emplace(text, static_cast<int32_t>(symbols_.size()));
    if (inserted) symbols_.push_back(text);
    return it->second;
  }

  void add_pairs(uint32_t w, int sign) {
    const Word& word = words_[w];
    for (size_t i = 0; i + 1 < word.symbols.size(); ++i) {
      const uint64_t key = pair_key(word.symbols[i], word.symbols[i + 1]);
      if (sign > 0) {
        pair_counts_[key] += word.count;
        pair_words_[key].push_back(w);
        touched_.insert(key);
      } else {
        pair_counts_[key] -= word.count;
      }
    }
  }

  void apply(uint64_t pair) {
    const auto a = static_cast<int32_t>(pair >> 32);
    const auto b = static_cast<int32_t>(pair & 0xFFFFFFFFu);
    std::string merged = symbols_[static_cast<size_t>(a)];
    merged += std::string_view(symbols_[static_cast<size_t>(b)]).substr(kContinuation.size());
    const int32_t c = add_symbol(merged);
    ++stamp_;
    touched_.clear();
    const std::vector<uint32_t> candidates = std::move(pair_words_[pair]);
    pair_words_.erase(pair);
    for (uint32_t w : candidates) {
      Word& word = words_[w];
      if (word.stamp == stamp_) continue;
      word.stamp = stamp_;
      add_pairs(w, -1);
      std::vector<int32_t> out;
      out.reserve(word.symbols.size());
      for (size_t i = 0; i < word.symbols.size(); ++i) {
        if (i + 1 < word.symbols.size() && word.symbols[i] == a && word.symbols[i + 1] == b) {
          out.push_back(c);
          ++i;
        } else {
          out.push_back(word.symbols[i]);
        }
      }
      word.symbols.swap(out);
      add_pairs(w, +1);
    }
    for (uint64_t key : touched_) heap_.push(Candidate{pair_counts_[key], key});
  }

  uint64_t min_frequency_;
  std::vector<Word> words_;
  std::vector<std::string> symbols_;
  std::unordered_map<std::string, int32_t> ids_;
  std::unordered_map<uint64_t, uint64_t> pair_counts_;
  std::unordered_map<uint64_t, std::vector<uint32_t>> pair_words_;
  std::unordered_set<uint64_t> touched_;
  std::priority_queue<Candidate> heap_;
  uint64_t stamp_ = 0;
  size_t alphabet_size_ = 0;
};

}  // namespace

std::vector<std::string> bert_special_token_layout() {
  std::vector<std::string> tokens{"[PAD]"};
  for (int i = 0; i < 99; ++i) tokens.push_back(fmt::format("[unused{}]", i));
  for (const char* special : {"[UNK]", "[CLS]", "[SEP]", "[MASK]"}) tokens.emplace_back(special);
  return tokens;
}

void count_words(const loom::Tokenizer& tokenizer, const std::string& text, WordCounts& counts,
                 std::string& scratch) {
  size_t needed = tokenizer.pre_tokenize(text.data(), text.size(), scratch.data(), scratch.size());
  if (needed >= scratch.size()) {
    scratch.resize(needed + 1);
    needed = tokenizer.pre_tokenize(text.data(), text.size(), scratch.data(), scratch.size());
  }
  const loom::SpecialTokenIds specials = tokenizer.special_token_ids();
  const std::string_view words(scratch.data(), needed);
  for (size_t start = 0; start < words.size();) {
    size_t end = words.find(' ', start);
    if (end == std::string_view::npos) end = words.size();
    const std::string_view word = words.substr(start, end - start);
    start = end + 1;
    if (word.empty()) continue;
    if (word.front() == '[' && word.back() == ']') {
      const int32_t id = tokenizer.token_to_id(word.data(), word.size());
      if (id >= 0 && (id == specials.pad || id == specials.unk || id == specials.cls || id == specials.sep ||
                      id == specials.mask))
        continue;
    }
    ++counts[std::string(word)];
  }
}

std::vector<std::string> learn_wordpiece_vocabulary(const WordCounts& counts, size_t size,
                                                    uint64_t min_frequency, WordpieceTrainingStats* stats) {
  std::vector<std::string> vocabulary = bert_special_token_layout();
  Learner learner(counts, std::max<uint64_t>(min_frequency, 1));
  const size_t fixed = vocabulary.size() + learner.alphabet_size();
  if (size < fixed)  // the user's --size for the user's text: a usage error (exit 2)
    throw InputError(
        fmt::format("--size {} is too small: the {} special tokens and the corpus's {} alphabet entries need "
                    "{}; raise --size",
                    size, vocabulary.size(), learner.alphabet_size(), fixed));
  size_t merges = 0;
  while (vocabulary.size() + learner.symbols().size() < size && learner.merge_best()) ++merges;
  const auto& symbols = learner.symbols();
  vocabulary.insert(vocabulary.end(), symbols.begin(), symbols.end());
  if (stats != nullptr) {
    stats->unique_words = counts.size();
    stats->words = 0;
    for (const auto& [word, count] : counts) stats->words += count;
    stats->alphabet = learner.alphabet_size();
    stats->merges = merges;
    stats->vocabulary = vocabulary.size();
  }
  return vocabulary;
}

}  // namespace loom::host
