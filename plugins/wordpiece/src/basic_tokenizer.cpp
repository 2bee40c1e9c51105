// Text → normalised, punctuation-split pieces; see basic_tokenizer.hpp for the rules.
#include "basic_tokenizer.hpp"

#include <cstring>

#include "character_classes.hpp"
#include "utf8_decoder.hpp"

namespace loom::wordpiece {

// Per-call state: the word being collected, as raw ASCII bytes until a non-ASCII code point
// arrives, then as code points.
struct BasicTokenizer::Scratch {
  std::string bytes;
  std::u32string word;
  bool ascii = true;
  std::u32string normalized;
  std::string piece;
};

namespace {

// Adds a non-ASCII code point, moving the word collected so far from bytes to code points.
void append_code_point(BasicTokenizer::Scratch& scratch, char32_t c) {
  if (scratch.ascii) {
    scratch.word.assign(scratch.bytes.begin(), scratch.bytes.end());
    scratch.bytes.clear();
    scratch.ascii = false;
  }
  scratch.word.push_back(c);
}

}  // namespace

BasicTokenizer::BasicTokenizer(const BasicTokenizerOptions& options, std::vector<SpecialToken> specials)
    : options_(options),
      normalizer_(options.lower_case, options.strip_accents),
      specials_(std::move(specials)) {}

const SpecialToken* BasicTokenizer::special_at(const char* text, size_t length, size_t position) const {
  // Like the trie of transformers: the longest special token starting here.
  const SpecialToken* best = nullptr;
  for (const SpecialToken& s : specials_) {
    if (s.text.empty() || s.text.size() > length - position) continue;
    if (std::memcmp(text + position, s.text.data(), s.text.size()) != 0) continue;
    if (best == nullptr || s.text.size() > best->text.size()) best = &s;
  }
  return best;
}

void BasicTokenizer::run(const char* text, size_t length, PieceSink& sink, uint64_t* replacements) const {
  Scratch scratch;
  const auto* bytes = reinterpret_cast<const unsigned char*>(text);
  size_t position = 0;
  while (position < length) {
    const unsigned char b = bytes[position];
    if (b < 128) {
      if (!options_.split_special_tokens && !specials_.empty() && b == '[') {
        if (const SpecialToken* special = special_at(text, length, position)) {
          flush_word(scratch, sink);
          sink.special(special->text, special->id);
          position += special->text.size();
          continue;
        }
      }
      ++position;
      switch (static_cast<CharacterClass>(kAscii.entry[b] & 3)) {
        case CharacterClass::word:
          if (scratch.ascii)
            scratch.bytes.push_back(static_cast<char>(b));
          else
            scratch.word.push_back(b);
          break;
        case CharacterClass::whitespace:
          flush_word(scratch, sink);
          break;
        default:  // removed: the word goes on
          break;
      }
      continue;
    }
    const char32_t c = decode_utf8(bytes, length, &position, replacements);
    switch (classify(c)) {
      case CharacterClass::word:
        append_code_point(scratch, c);
        break;
      case CharacterClass::whitespace:
        flush_word(scratch, sink);
        break;
      case CharacterClass::cjk:
        if (options_.tokenize_chinese_chars) {
          flush_word(scratch, sink);
          scratch.word.assign(1, c);
          scratch.ascii = false;
          flush_word(scratch, sink);
        } else {
          append_code_point(scratch, c);
        }
        break;
      case CharacterClass::removed:
        break;
    }
  }
  flush_word(scratch, sink);
}

void BasicTokenizer::flush_word(Scratch& scratch, PieceSink& sink) const {
  if (scratch.ascii) {
    if (!scratch.bytes.empty()) emit_ascii_word(scratch, sink);
    scratch.bytes.clear();
  } else {
    if (!scratch.word.empty()) emit_unicode_word(scratch, sink);
    scratch.word.clear();
    scratch.ascii = true;
  }
}

void BasicTokenizer::emit_ascii_word(Scratch& scratch, PieceSink& sink) const {
  std::string& word = scratch.bytes;
  if (normalizer_.lower_case())
    for (char& c : word)
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
  size_t start = 0;
  for (size_t i = 0; i < word.size(); ++i) {
    if ((kAscii.entry[static_cast<unsigned char>(word[i])] & 4) == 0) continue;
    if (i > start) sink.piece(std::string_view(word).substr(start, i - start), i - start);
    sink.piece(std::string_view(word).substr(i, 1), 1);
    start = i + 1;
  }
  if (start < word.size()) sink.piece(std::string_view(word).substr(start), word.size() - start);
}

void BasicTokenizer::emit_unicode_word(Scratch& scratch, PieceSink& sink) const {
  normalizer_.normalize(scratch.word, scratch.normalized);
  std::string& piece = scratch.piece;
  piece.clear();
  size_t code_points = 0;
  for (char32_t c : scratch.normalized) {
    if (!is_punctuation(c)) {
      append_utf8(piece, c);
      ++code_points;
      continue;
    }
    if (code_points > 0) sink.piece(piece, code_points);
    piece.clear();
    append_utf8(piece, c);
    sink.piece(piece, 1);
    piece.clear();
    code_points = 0;
  }
  if (code_points > 0) sink.piece(piece, code_points);
}

}  // namespace loom::wordpiece
