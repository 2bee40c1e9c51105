// See byte_level_decoder.hpp.
#include "byte_level_decoder.hpp"

#include "byte_level_alphabet.hpp"
#include "loom/sdk/error.hpp"
#include "utf8.hpp"

namespace loom::bpe {
namespace {

void replace_all(std::string& text, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(text.size());
  size_t start = 0;
  for (size_t hit = text.find(from); hit != std::string::npos; hit = text.find(from, start)) {
    out.append(text, start, hit - start);
    out.append(to);
    start = hit + from.size();
  }
  out.append(text, start, std::string::npos);
  text.swap(out);
}

}  // namespace

std::string decode_byte_level(const std::vector<std::string>& spellings, const std::vector<uint8_t>& skipped,
                              const int32_t* ids, size_t count, const loom::DecodeOptions& options) {
  const ByteLevelAlphabet& alphabet = ByteLevelAlphabet::instance();
  std::string bytes;
  for (size_t i = 0; i < count; ++i) {
    const int32_t id = ids[i];
    if (id < 0 || static_cast<size_t>(id) >= spellings.size())
      throw loom::Error("decode: id " + std::to_string(id) + " is outside the vocabulary (size " +
                        std::to_string(spellings.size()) + ")");
    if (options.skip_special_tokens && skipped[static_cast<size_t>(id)] != 0) continue;
    const std::string& spelling = spellings[static_cast<size_t>(id)];
    if (auto raw = alphabet.to_bytes(spelling)) bytes += *raw;
    else bytes += spelling;
  }
  std::string text = repair_utf8(bytes.data(), bytes.size()).text;
  if (text.empty()) text = std::move(bytes);  // valid already
  if (options.clean_up_tokenization_spaces) {
    static constexpr std::string_view kReplacements[][2] = {
        {" .", "."},     {" ?", "?"},   {" !", "!"},   {" ,", ","},     {" ' ", "'"},
        {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
    for (const auto& r : kReplacements) replace_all(text, r[0], r[1]);
  }
  return text;
}

}  // namespace loom::bpe
