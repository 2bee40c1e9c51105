// Where and why a JSON file failed to parse, in words for the user. nlohmann's message is
// "[json.exception.parse_error.101] parse error at line 2, column 1: syntax error while parsing
// object key - unexpected end of input; expected string literal"; json_parse_problem returns what
// follows "not valid JSON" in Loom's message: " at line 2, column 1: syntax error while parsing
// object key - unexpected end of input; expected string literal" (": <reason>" when the library
// gives no position), so errors read "config.json: not valid JSON at line 2, column 1: ...".
#pragma once

#include <exception>
#include <string>

namespace loom_json {

inline std::string json_parse_problem(const std::exception& error) {
  std::string text = error.what();
  if (text.rfind("[json.exception.", 0) == 0) {
    const size_t end = text.find("] ");
    if (end != std::string::npos) text.erase(0, end + 2);
  }
  // "parse error at line 2, ..." → " at line 2, ..."; "parse error: reason" → ": reason".
  if (text.rfind("parse error", 0) == 0) return text.erase(0, 11);
  return text.insert(0, ": ");
}

}  // namespace loom_json
