// See byte_level_alphabet.hpp.
#include "byte_level_alphabet.hpp"

#include "utf8.hpp"

namespace loom::bpe {

ByteLevelAlphabet::ByteLevelAlphabet() {
  byte_of_code_point_.fill(-1);
  char32_t next = 256;
  for (int b = 0; b < 256; ++b) {
    const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    const char32_t c = printable ? static_cast<char32_t>(b) : next++;
    append_utf8(spellings_[static_cast<size_t>(b)], c);
    byte_of_code_point_[c] = static_cast<int16_t>(b);
  }
}

const ByteLevelAlphabet& ByteLevelAlphabet::instance() {
  static const ByteLevelAlphabet alphabet;
  return alphabet;
}

std::optional<std::string> ByteLevelAlphabet::to_bytes(std::string_view token) const {
  std::string bytes;
  bytes.reserve(token.size());
  const auto* text = reinterpret_cast<const unsigned char*>(token.data());
  size_t position = 0;
  while (position < token.size()) {
    bool ill_formed = false;
    const char32_t c = decode_utf8(text, token.size(), &position, &ill_formed);
    if (ill_formed || c >= byte_of_code_point_.size() || byte_of_code_point_[c] < 0) return std::nullopt;
    bytes.push_back(static_cast<char>(byte_of_code_point_[c]));
  }
  return bytes;
}

std::string ByteLevelAlphabet::to_spelling(std::string_view bytes) const {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char b : bytes) out += spellings_[static_cast<unsigned char>(b)];
  return out;
}

}  // namespace loom::bpe
