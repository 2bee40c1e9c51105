// See bpe_pipeline.hpp.
#include "bpe_pipeline.hpp"

#include <algorithm>

#include "byte_level_alphabet.hpp"
#include "character_classes.hpp"
#include "gpt2_split.hpp"
#include "utf8.hpp"

namespace loom::bpe {
namespace {

constexpr char32_t kSpaceMarker = 0x120;  // "Ġ", the byte-level spelling of a space

bool is_trimmed_space(char32_t c) { return c == kSpaceMarker || is_white_space(c); }

// Whitespace characters at the start (or end) of UTF-8 `text`, counted as `tokenizers` does.
uint16_t leading_space_count(std::string_view text) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  size_t position = 0;
  uint16_t count = 0;
  while (position < text.size() && is_trimmed_space(decode_valid_utf8(bytes, &position))) ++count;
  return count;
}

uint16_t trailing_space_count(std::string_view text) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
  size_t end = text.size();
  uint16_t count = 0;
  while (end > 0) {
    size_t start = end - 1;
    while (start > 0 && is_continuation_byte(bytes[start])) --start;
    size_t position = start;
    if (!is_trimmed_space(decode_valid_utf8(bytes, &position))) break;
    ++count;
    end = start;
  }
  return count;
}

}  // namespace

// What the pre-tokenizer splits: `text` (normalized, with the prefix space when added) and where
// each byte came from — `source` per byte after a normalizer, otherwise the identity onto
// `input` starting at `base`, with a prefix space standing for the stretch's first character.
struct BpePipeline::Stretch {
  std::string_view text;
  const std::pair<uint32_t, uint32_t>* source = nullptr;
  std::string_view input;
  uint32_t base = 0;
  uint32_t prefix = 0;

  // Input bytes of text[a, b): from the start of the character of text[a] to the end of the
  // character of text[b - 1].
  std::pair<uint32_t, uint32_t> span(uint32_t a, uint32_t b) const {
    if (source != nullptr) return {source[a].first, source[b - 1].second};
    const auto* bytes = reinterpret_cast<const unsigned char*>(input.data());
    const auto input_byte = [&](uint32_t i) { return i < prefix ? base : base + (i - prefix); };
    const auto character_start = [&](uint32_t p) {  // a continuation byte never starts a character
      while (p > 0 && is_continuation_byte(bytes[p])) --p;
      return p;
    };
    const uint32_t first = character_start(input_byte(a));
    const uint32_t last = character_start(input_byte(b - 1));
    return {first, last + static_cast<uint32_t>(utf8_length(bytes[last]))};
  }
};

BpePipeline::BpePipeline(BpeConfig& config)
    : normalizer_(config.normalizer), pre_tokenizer_(config.pre_tokenizer) {
  std::vector<AddedToken> raw, normalized;
  for (const AddedToken& t : config.added_tokens) (t.normalized ? normalized : raw).push_back(t);
  raw_tokens_ = AddedTokenMatcher(std::move(raw));
  normalized_tokens_ = AddedTokenMatcher(std::move(normalized));
  int32_t size = 0;
  for (const auto& [spelling, id] : config.vocabulary) size = std::max(size, id + 1);
  leading_spaces_.assign(static_cast<size_t>(size), 0);
  trailing_spaces_.assign(static_cast<size_t>(size), 0);
  for (const auto& [spelling, id] : config.vocabulary) {
    leading_spaces_[static_cast<size_t>(id)] = static_cast<uint8_t>(std::min<uint16_t>(255, leading_space_count(spelling)));
    trailing_spaces_[static_cast<size_t>(id)] =
        static_cast<uint8_t>(std::min<uint16_t>(255, trailing_space_count(spelling)));
  }
  model_ = std::make_unique<BpeModel>(std::move(config.vocabulary), config.merges, config.model, config.source);
}

void BpePipeline::added_token(const AddedToken& token, std::string_view matched, uint32_t begin, uint32_t end,
                              std::vector<SequenceToken>& out) const {
  // The token's text is what it matched, stripped whitespace included, as in `tokenizers`.
  out.push_back(SequenceToken{token.id, begin, end, leading_space_count(matched), trailing_space_count(matched)});
}

void BpePipeline::pre_tokenize_and_merge(const Stretch& stretch, std::vector<SequenceToken>& out) const {
  thread_local std::vector<std::pair<uint32_t, uint32_t>> pieces;
  thread_local std::vector<WordPiece> word_tokens;
  pieces.clear();
  if (pre_tokenizer_.use_regex) split_gpt2(stretch.text, pieces);
  else pieces.emplace_back(0, static_cast<uint32_t>(stretch.text.size()));
  for (const auto& [begin, end] : pieces) {
    word_tokens.clear();
    model_->tokenize_word(stretch.text.substr(begin, end - begin), word_tokens);
    for (const WordPiece& piece : word_tokens) {
      const auto [from, to] = stretch.span(begin + piece.begin, begin + piece.end);
      const auto id = static_cast<size_t>(piece.id);
      const auto leading = static_cast<uint16_t>(id < leading_spaces_.size() ? leading_spaces_[id] : 0);
      const auto trailing = static_cast<uint16_t>(id < trailing_spaces_.size() ? trailing_spaces_[id] : 0);
      out.push_back(SequenceToken{piece.id, from, to, leading, trailing});
    }
  }
}

void BpePipeline::run(std::string_view text, std::vector<SequenceToken>& out) const {
  std::vector<TextSplit> raw_splits;
  if (raw_tokens_.empty()) {
    if (!text.empty()) raw_splits.push_back(TextSplit{-1, 0, static_cast<uint32_t>(text.size())});
  } else {
    raw_tokens_.split(text, raw_splits);
  }
  std::vector<TextSplit> splits;
  std::string prefixed;
  std::vector<std::pair<uint32_t, uint32_t>> prefixed_source;
  for (const TextSplit& raw : raw_splits) {
    const std::string_view piece = text.substr(raw.begin, raw.end - raw.begin);
    if (raw.token >= 0) {
      added_token(raw_tokens_.token(raw.token), piece, raw.begin, raw.end, out);
      continue;
    }
    NormalizedText normalized;
    std::string_view seen = piece;  // what the normalized added tokens and the pre-tokenizer see
    if (!normalizer_.empty()) {
      normalized = normalizer_.apply(piece, raw.begin);
      seen = normalized.text;
    }
    splits.clear();
    if (normalized_tokens_.empty()) {
      if (!seen.empty()) splits.push_back(TextSplit{-1, 0, static_cast<uint32_t>(seen.size())});
    } else {
      normalized_tokens_.split(seen, splits);
    }
    for (const TextSplit& split : splits) {
      const std::string_view part = seen.substr(split.begin, split.end - split.begin);
      if (split.token >= 0) {
        const auto [from, to] = normalizer_.empty()
                                    ? std::make_pair(raw.begin + split.begin, raw.begin + split.end)
                                    : std::make_pair(normalized.source[split.begin].first,
                                                     normalized.source[split.end - 1].second);
        added_token(normalized_tokens_.token(split.token), part, from, to, out);
        continue;
      }
      const bool add_prefix = pre_tokenizer_.add_prefix_space && part.front() != ' ';
      Stretch stretch;
      stretch.input = text;
      stretch.base = raw.begin + split.begin;
      stretch.prefix = add_prefix ? 1 : 0;
      if (add_prefix) {
        prefixed.assign(1, ' ');
        prefixed.append(part);
        stretch.text = prefixed;
      } else {
        stretch.text = part;
      }
      if (!normalizer_.empty()) {
        const auto* source = normalized.source.data() + split.begin;
        if (add_prefix) {
          prefixed_source.assign(1, source[0]);  // the space stands for the first character
          prefixed_source.insert(prefixed_source.end(), source, source + part.size());
          source = prefixed_source.data();
        }
        stretch.source = source;
      }
      pre_tokenize_and_merge(stretch, out);
    }
  }
}

void BpePipeline::spelled_words(std::string_view text, std::string& joined) const {
  joined.clear();
  NormalizedText normalized;
  std::string_view seen = text;
  if (!normalizer_.empty()) {
    normalized = normalizer_.apply(text, 0);
    seen = normalized.text;
  }
  if (seen.empty()) return;
  std::string prefixed;
  if (pre_tokenizer_.add_prefix_space && seen.front() != ' ') {
    prefixed = " ";
    prefixed.append(seen);
    seen = prefixed;
  }
  std::vector<std::pair<uint32_t, uint32_t>> pieces;
  if (pre_tokenizer_.use_regex) split_gpt2(seen, pieces);
  else pieces.emplace_back(0, static_cast<uint32_t>(seen.size()));
  const ByteLevelAlphabet& alphabet = ByteLevelAlphabet::instance();
  for (const auto& [begin, end] : pieces) {
    if (!joined.empty()) joined.push_back(' ');
    for (size_t i = begin; i < end; ++i) joined += alphabet.spelling(static_cast<unsigned char>(seen[i]));
  }
}

}  // namespace loom::bpe
