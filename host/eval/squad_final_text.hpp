// get_final_text of the reference's run_squad.py: projects a predicted answer, spelled in the
// tokenizer's normalised form (lower-cased, accents stripped, punctuation split off), back onto the
// original context text, so "steve smith's" becomes "Steve Smith" out of "Steve Smith's".
//
//   tok_text = basic_tokenize(orig_text)        words joined by single spaces
//   find pred_text in tok_text                  (not found → orig_text, the fall-back)
//   strip the spaces of both texts; when their lengths differ (normalisation changed the number
//   of characters, e.g. a stripped accent or 'İ') → orig_text
//   map pred_text's first and last character through the space-free texts back to orig_text
//   (a position that does not map → orig_text) and return that slice of orig_text.
// Lengths and positions are in code points, as Python's str counts them; only ' ' is a space.
#pragma once

#include <functional>
#include <string>

namespace loom::host {

/// The tokenizer's basic tokenisation of a text: its words joined by single spaces (what
/// Tokenizer::pre_tokenize returns; BasicTokenizer(do_lower_case).tokenize joined in the reference).
using BasicTokenize = std::function<std::string(const std::string& text)>;

/// get_final_text(pred_text, orig_text): UTF-8 in and out.
std::string squad_final_text(const std::string& pred_text, const std::string& orig_text,
                             const BasicTokenize& basic_tokenize);

}  // namespace loom::host
