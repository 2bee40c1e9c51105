// English sentence splitter; see sentence_splitter.hpp for the rules.
#include "prep/sentence_splitter.hpp"

#include <algorithm>
#include <array>
#include <cctype>

namespace loom::host {
namespace {

// Words that end in a period without ending a sentence (compared without the period).
constexpr std::array<std::string_view, 62> kAbbreviations = {
    "Mr",  "Mrs",  "Ms",     "Messrs", "Dr",   "Prof", "Sr",   "Jr",  "St",  "Mt",  "Gen",  "Gov",  "Sen",
    "Rep", "Reps", "Col",    "Capt",   "Lt",   "Sgt",  "Maj",  "Adm", "Rev", "Hon", "Pres", "Supt", "Esq",
    "vs",  "etc",  "Inc",    "Ltd",    "Co",   "Corp", "Bros", "No",  "Nos", "Vol", "Vols", "pp",   "Fig",
    "cf",  "al",   "approx", "Ave",    "Blvd", "Dept", "Univ", "Jan", "Feb", "Mar", "Apr",  "Jun",  "Jul",
    "Aug", "Sep",  "Sept",   "Oct",    "Nov",  "Dec",  "Ft",   "viz", "ca",  "ch"};

bool is_abbreviation(std::string_view word) {
  return std::find(kAbbreviations.begin(), kAbbreviations.end(), word) != kAbbreviations.end();
}

// Closing and opening punctuation that may surround a sentence end: ASCII quotes/brackets and
// the UTF-8 curly quotes ” ’ » (closing) / “ ‘ « (opening).
size_t closing_suffix_length(std::string_view word) {
  size_t end = word.size();
  for (;;) {
    if (end >= 1 && std::string_view("\"')]").find(word[end - 1]) != std::string_view::npos) {
      end -= 1;
    } else if (end >= 3 &&
               (word.substr(end - 3, 3) == "\xE2\x80\x9D" || word.substr(end - 3, 3) == "\xE2\x80\x99")) {
      end -= 3;
    } else if (end >= 2 && word.substr(end - 2, 2) == "\xC2\xBB") {
      end -= 2;
    } else {
      return word.size() - end;
    }
  }
}

size_t opening_prefix_length(std::string_view word) {
  size_t start = 0;
  for (;;) {
    const std::string_view rest = word.substr(start);
    if (!rest.empty() && std::string_view("\"'([").find(rest[0]) != std::string_view::npos) {
      start += 1;
    } else if (rest.substr(0, 3) == "\xE2\x80\x9C" || rest.substr(0, 3) == "\xE2\x80\x98") {
      start += 3;
    } else if (rest.substr(0, 2) == "\xC2\xAB") {
      start += 2;
    } else {
      return start;
    }
  }
}

// True when `word` can start a sentence: upper-case letter or digit after opening punctuation.
// Non-ASCII letters (É, Ö, ...) are accepted as capitals: prose rarely starts a lower-case word
// with one, and a wrong split costs less than a run-on sentence.
bool starts_sentence(std::string_view word) {
  const std::string_view rest = word.substr(opening_prefix_length(word));
  if (rest.empty()) return false;
  const auto c = static_cast<unsigned char>(rest[0]);
  return std::isupper(c) || std::isdigit(c) || c >= 0xC3;
}

bool ends_sentence(std::string_view word, std::string_view next) {
  const std::string_view core = word.substr(0, word.size() - closing_suffix_length(word));
  if (core.empty()) return false;
  const bool ellipsis = core.size() >= 3 && core.substr(core.size() - 3) == "\xE2\x80\xA6";
  const char last = core.back();
  if (!ellipsis && last != '.' && last != '?' && last != '!') return false;
  if (!starts_sentence(next)) return false;
  if (last != '.' || ellipsis) return true;
  if (core.size() >= 3 && core.substr(core.size() - 3) == "...") return true;
  std::string_view stem = core.substr(0, core.size() - 1);
  stem = stem.substr(opening_prefix_length(stem));
  if (stem.empty()) return true;
  if (stem.size() == 1 && std::isalpha(static_cast<unsigned char>(stem[0]))) return false;  // initial
  if (stem.find('.') != std::string_view::npos) return false;                               // U.S., a.m.
  return !is_abbreviation(stem);
}

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

void split_paragraph(const std::vector<std::string_view>& words, std::vector<std::string>& out) {
  std::string sentence;
  for (size_t i = 0; i < words.size(); ++i) {
    if (!sentence.empty()) sentence += ' ';
    sentence += words[i];
    if (i + 1 == words.size() || ends_sentence(words[i], words[i + 1])) {
      out.push_back(std::move(sentence));
      sentence.clear();
    }
  }
}

}  // namespace

std::vector<std::string> split_sentences(std::string_view text) {
  std::vector<std::string> sentences;
  std::vector<std::string_view> words;
  size_t position = 0;
  while (position < text.size()) {
    size_t line_end = text.find('\n', position);
    if (line_end == std::string_view::npos) line_end = text.size();
    const std::string_view line = text.substr(position, line_end - position);
    position = line_end + 1;
    size_t i = 0;
    bool blank = true;
    while (i < line.size()) {
      while (i < line.size() && is_space(line[i])) ++i;
      const size_t start = i;
      while (i < line.size() && !is_space(line[i])) ++i;
      if (i > start) {
        words.push_back(line.substr(start, i - start));
        blank = false;
      }
    }
    if (blank) {
      split_paragraph(words, sentences);
      words.clear();
    }
  }
  split_paragraph(words, sentences);
  return sentences;
}

}  // namespace loom::host
