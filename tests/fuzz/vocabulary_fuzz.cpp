// libFuzzer target for the WordPiece vocabulary reader (plugins/wordpiece/src/vocabulary.hpp) and
// the tokenizer built on what it read. The input holds up to three parts separated by lines "%%":
// vocab.txt, a text and a second text (a pair); its last byte picks the tokenizer's settings.
// Properties:
// - Vocabulary::load refuses only an empty file (loom::IoError); otherwise it has one token per line
//   (a CRLF ending read as LF) and find() returns, for every token, the last id spelling it, as an
//   independent map built here does;
// - with an [UNK], WordpieceTokenizer tokenizes, encodes and decodes both texts: every id is in the
//   vocabulary, an encoding never writes past its buffers, and the documented loom::Error is the only
//   exception (a vocabulary without [CLS]/[SEP] cannot encode; a truncation strategy that cannot fit).
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.hpp"
#include "loom/sdk/error.hpp"
#include "vocabulary.hpp"
#include "wordpiece_tokenizer.hpp"

using loom::wordpiece::Vocabulary;
using loom_fuzz::require;

namespace {

// The lines transformers' load_vocab reads: split on '\n', one trailing '\r' dropped, no entry
// after a final '\n'.
std::vector<std::string> lines_of(std::string_view text) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    std::string line(text.substr(start, end - start));
    if (!line.empty() && line.back() == '\r') line.pop_back();
    lines.push_back(std::move(line));
    start = end + 1;
  }
  return lines;
}

void check_ids(const std::vector<std::int32_t>& ids, std::int32_t size) {
  for (std::int32_t id : ids) require(id >= 0 && id < size, "every id is in the vocabulary");
}

void check_tokenizer(const Vocabulary& vocabulary, std::string_view a, std::string_view b, std::uint8_t knobs) {
  loom::wordpiece::WordpieceSettings settings;
  settings.basic.lower_case = (knobs & 1) == 0;
  settings.basic.strip_accents = (knobs & 2) != 0;
  settings.basic.tokenize_chinese_chars = (knobs & 4) != 0;
  settings.basic.split_special_tokens = (knobs & 8) != 0;
  settings.max_input_chars_per_word = (knobs & 16) != 0 ? 3 : 100;
  const loom::wordpiece::WordpieceTokenizer tokenizer(settings, vocabulary);
  const std::int32_t size = vocabulary.size();
  const std::vector<std::int32_t> ids = tokenizer.tokenize_to_vector(a.data(), a.size());
  check_ids(ids, size);
  std::vector<char> text(ids.size() * 8 + 16);
  const std::size_t needed = tokenizer.decode(ids.data(), ids.size(), {}, text.data(), text.size());
  std::string decoded(needed, '\0');
  tokenizer.decode(ids.data(), ids.size(), {(knobs & 32) != 0, true}, decoded.data(), decoded.size());

  loom::EncodeOptions options;
  options.max_length = knobs >> 6 == 0 ? 0 : std::size_t{8} << (knobs >> 6);
  options.truncation = static_cast<loom::Truncation>((knobs >> 4) & 3);
  options.pad_to_max_length = (knobs & 32) != 0;
  constexpr std::size_t kCapacity = 64;
  constexpr std::int32_t kUnwritten = -7;
  std::vector<std::int32_t> input(kCapacity + 1, kUnwritten), types(kCapacity + 1, kUnwritten),
      mask(kCapacity + 1, kUnwritten);
  try {
    const std::size_t length =
        tokenizer.encode(a.data(), a.size(), b.empty() ? nullptr : b.data(), b.size(), options,
                         {input.data(), types.data(), mask.data(), kCapacity});
    require(input[kCapacity] == kUnwritten && types[kCapacity] == kUnwritten && mask[kCapacity] == kUnwritten,
            "encode writes at most capacity elements");
    for (std::size_t i = 0; i < std::min(length, kCapacity); ++i) {
      require(input[i] >= 0 && input[i] < size, "encoded ids are in the vocabulary");
      require(types[i] == 0 || types[i] == 1, "token types are 0 or 1");
      require(mask[i] == 0 || mask[i] == 1, "the attention mask is 0 or 1");
    }
  } catch (const loom::Error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const auto parts = loom_fuzz::split_parts(input, "%%");
  const std::string path = loom_fuzz::write_scratch_file("vocab.txt", parts[0]);
  const std::vector<std::string> lines = lines_of(parts[0]);
  Vocabulary vocabulary;
  try {
    vocabulary = Vocabulary::load(path);
  } catch (const loom::IoError&) {
    require(lines.empty(), "only an empty vocabulary file is refused");
    return 0;
  }
  require(static_cast<std::size_t>(vocabulary.size()) == lines.size(), "one token per line");
  std::map<std::string, std::int32_t> last;
  for (std::size_t id = 0; id < lines.size(); ++id) last[lines[id]] = static_cast<std::int32_t>(id);
  for (std::int32_t id = 0; id < vocabulary.size(); ++id) {
    const std::string& line = lines[static_cast<std::size_t>(id)];
    // token() is NUL-terminated: a line holding a NUL reads up to it.
    require(vocabulary.token(id) != nullptr && vocabulary.token(id) == line.substr(0, line.find('\0')),
            "token(id) is the line");
    require(vocabulary.find(line) == last[line], "find returns the last id of a token");
  }
  require(vocabulary.token(-1) == nullptr && vocabulary.token(vocabulary.size()) == nullptr, "ids out of range");
  if (vocabulary.find("[UNK]") < 0) return 0;
  const std::string_view a = parts.size() > 1 ? parts[1] : std::string_view("Hello, unaffable world!");
  const std::string_view b = parts.size() > 2 ? parts[2] : std::string_view();
  check_tokenizer(vocabulary, a, b, size > 0 ? data[size - 1] : 0);
  return 0;
}
