// See gpt2_split.hpp.
#include "gpt2_split.hpp"

#include "character_classes.hpp"
#include "utf8.hpp"

namespace loom::bpe {
namespace {

struct Scanner {
  const unsigned char* text;
  size_t length;

  // Class of the character at `position` (< length) and its end.
  CharacterClass at(size_t position, size_t* end) const {
    const unsigned char lead = text[position];
    if (lead < 0x80) {
      *end = position + 1;
      return character_class(lead);
    }
    size_t next = position;
    const char32_t c = decode_valid_utf8(text, &next);
    *end = next;
    return character_class(c);
  }

  // End of the run of characters of class `k` starting at `position`.
  size_t run(size_t position, CharacterClass k) const {
    while (position < length) {
      size_t end;
      if (at(position, &end) != k) break;
      position = end;
    }
    return position;
  }

  // Length of the contraction ('s 't 're 've 'm 'll 'd) at `position`, 0 when there is none.
  size_t contraction(size_t position) const {
    if (text[position] != '\'' || position + 1 >= length) return 0;
    const unsigned char a = text[position + 1];
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
    if (position + 2 >= length) return 0;
    const unsigned char b = text[position + 2];
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
    return 0;
  }
};

}  // namespace

void split_gpt2(std::string_view view, std::vector<std::pair<uint32_t, uint32_t>>& pieces) {
  const Scanner s{reinterpret_cast<const unsigned char*>(view.data()), view.size()};
  size_t position = 0;
  const auto emit = [&](size_t end) {
    pieces.emplace_back(static_cast<uint32_t>(position), static_cast<uint32_t>(end));
    position = end;
  };
  while (position < s.length) {
    if (const size_t n = s.contraction(position); n > 0) {
      emit(position + n);
      continue;
    }
    size_t end;
    CharacterClass k = s.at(position, &end);
    if (s.text[position] == ' ' && end < s.length) {
      // " ?X+": a space starts the word that follows it unless whitespace follows.
      size_t after;
      const CharacterClass next = s.at(end, &after);
      if (next != CharacterClass::space) {
        emit(s.run(end, next));
        continue;
      }
    }
    if (k != CharacterClass::space) {
      emit(s.run(position, k));
      continue;
    }
    // Whitespace: \s+(?!\S), then \s+.
    const size_t run_end = s.run(position, CharacterClass::space);
    if (run_end == s.length) {
      emit(run_end);
      continue;
    }
    size_t last = run_end - 1;  // start of the run's last character
    while (is_continuation_byte(s.text[last])) --last;
    if (last > position) {
      emit(last);  // the run without its last character; that one is looked at again
      continue;
    }
    emit(run_end);  // one whitespace character before a non-space: \s+ (a space went above)
  }
}

}  // namespace loom::bpe
