// get_final_text; see squad_final_text.hpp.
#include "eval/squad_final_text.hpp"

#include <unordered_map>
#include <vector>

#include "eval/squad_normalize.hpp"

namespace loom::host {
namespace {

// _strip_spaces: the text without ' ', and for each kept character its index in `text`.
std::u32string strip_spaces(const std::u32string& text, std::vector<size_t>& kept_to_original) {
  std::u32string kept;
  kept_to_original.clear();
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == U' ') continue;
    kept_to_original.push_back(i);
    kept.push_back(text[i]);
  }
  return kept;
}

}  // namespace

std::string squad_final_text(const std::string& pred_text, const std::string& orig_text,
                             const BasicTokenize& basic_tokenize) {
  const std::u32string original = utf8_to_code_points(orig_text);
  const std::u32string tokenized = utf8_to_code_points(basic_tokenize(orig_text));
  const std::u32string predicted = utf8_to_code_points(pred_text);
  const size_t start = tokenized.find(predicted);
  if (start == std::u32string::npos) return orig_text;
  const size_t end = start + predicted.size() - 1;  // an empty pred_text maps nowhere below

  std::vector<size_t> original_map, tokenized_map;
  const std::u32string original_kept = strip_spaces(original, original_map);
  const std::u32string tokenized_kept = strip_spaces(tokenized, tokenized_map);
  if (original_kept.size() != tokenized_kept.size()) return orig_text;

  // tok_s_to_ns_map: position in `tokenized` → position in its space-free form.
  std::unordered_map<size_t, size_t> tokenized_to_kept;
  for (size_t i = 0; i < tokenized_map.size(); ++i) tokenized_to_kept[tokenized_map[i]] = i;
  auto to_original = [&](size_t position, size_t& out) {
    const auto it = tokenized_to_kept.find(position);
    if (it == tokenized_to_kept.end() || it->second >= original_map.size()) return false;
    out = original_map[it->second];
    return true;
  };
  size_t original_start = 0, original_end = 0;
  if (predicted.empty() || !to_original(start, original_start) || !to_original(end, original_end))
    return orig_text;
  if (original_end < original_start) return "";  // Python's empty slice
  return code_points_to_utf8(original.substr(original_start, original_end - original_start + 1));
}

}  // namespace loom::host
