// GPT-2's byte-level alphabet: every byte is spelled by one printable character, so a vocabulary of
// strings covers arbitrary bytes. Bytes 33..126, 161..172 and 174..255 stand for themselves; the
// other 68 take U+0100 onwards in byte order (space 0x20 becomes "Ġ" U+0120, newline "Ċ").
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace loom::bpe {

class ByteLevelAlphabet {
 public:
  ByteLevelAlphabet();

  /// The UTF-8 spelling of byte `b`'s character.
  const std::string& spelling(unsigned char b) const { return spellings_[b]; }
  /// `token` (a string of alphabet characters) back to the bytes it spells; nullopt when it holds
  /// a character outside the alphabet (an added token such as "<s>" is spelled in ASCII, which is
  /// inside it, and maps to itself).
  std::optional<std::string> to_bytes(std::string_view token) const;
  /// `bytes` spelled in the alphabet.
  std::string to_spelling(std::string_view bytes) const;

  static const ByteLevelAlphabet& instance();

 private:
  std::array<std::string, 256> spellings_;
  std::array<int16_t, 512> byte_of_code_point_;  // -1: not in the alphabet
};

}  // namespace loom::bpe
