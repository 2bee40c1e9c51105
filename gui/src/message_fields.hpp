// Reading the fields of a protocol message that another process wrote (the metrics stream's
// server, a replayed metrics.jsonl). A field of an unexpected type or range reads as absent, so a
// foreign, damaged or newer message changes what is shown, never stops loom-dash: nlohmann's
// value() throws on a mistyped field, and get<uint64_t>() of a negative or huge double is undefined.
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

namespace loom::dash {

/// The string `message[key]`, or `otherwise` when `message` is no object or the field is absent or
/// not a string.
inline std::string text_field(const nlohmann::json& message, const char* key, const std::string& otherwise) {
  if (!message.is_object()) return otherwise;
  const auto found = message.find(key);
  return found != message.end() && found->is_string() ? found->get<std::string>() : otherwise;
}

/// `value` as a count: a non-negative integer, or a float that is one (2.0); 0 for anything else.
inline uint64_t count_of(const nlohmann::json& value) {
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (value.is_number_integer()) return value.get<int64_t>() > 0 ? static_cast<uint64_t>(value.get<int64_t>()) : 0;
  if (value.is_number_float()) {
    const double number = value.get<double>();
    // 2^64 is exact as a double; NaN fails both comparisons.
    return number >= 0 && number < 18446744073709551616.0 ? static_cast<uint64_t>(number) : 0;
  }
  return 0;
}

/// The count `message[key]` (count_of), 0 when `message` is no object or the field is absent.
inline uint64_t count_field(const nlohmann::json& message, const char* key) {
  if (!message.is_object()) return 0;
  const auto found = message.find(key);
  return found != message.end() ? count_of(*found) : 0;
}

}  // namespace loom::dash
