// Ids → text; see token_decoder.hpp for the contract.
#include "token_decoder.hpp"

#include "loom/sdk/error.hpp"

namespace loom::wordpiece {
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

bool is_ascii_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

}  // namespace

std::string clean_up_tokenization(std::string text) {
  static constexpr std::string_view kReplacements[][2] = {
      {" .", "."},     {" ?", "?"},   {" !", "!"},   {" ,", ","},     {" ' ", "'"},
      {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& r : kReplacements) replace_all(text, r[0], r[1]);
  return text;
}

std::string decode_ids(const Vocabulary& vocabulary, const int32_t* ids, size_t count,
                       const DecodeOptions& options, const int32_t* special_ids, size_t special_count) {
  std::string text;
  size_t emitted = 0;
  for (size_t i = 0; i < count; ++i) {
    const char* token = vocabulary.token(ids[i]);
    if (token == nullptr)
      throw loom::Error("decode: id " + std::to_string(ids[i]) + " is outside the vocabulary (size " +
                        std::to_string(vocabulary.size()) + ")");
    if (options.skip_special_tokens) {
      bool special = false;
      for (size_t s = 0; s < special_count; ++s) special = special || special_ids[s] == ids[i];
      if (special) continue;
    }
    if (emitted++ > 0) text.push_back(' ');
    text += token;
  }
  replace_all(text, " ##", "");
  size_t begin = 0, end = text.size();
  while (begin < end && is_ascii_space(text[begin])) ++begin;
  while (end > begin && is_ascii_space(text[end - 1])) --end;
  text = text.substr(begin, end - begin);
  return options.clean_up_tokenization_spaces ? clean_up_tokenization(std::move(text)) : text;
}

}  // namespace loom::wordpiece
