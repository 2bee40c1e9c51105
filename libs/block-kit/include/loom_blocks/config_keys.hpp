// ConfigKeys: typed reading of a model's whole config.json (BlockSetup::config_json), for the keys
// only one family has. A key that is absent or null takes the caller's default, as Hugging Face's
// config classes give it; a present value of the wrong type or out of range is refused with a
// loom::ConfigError naming the block, the file and the key.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "loom/sdk/error.hpp"

namespace loom_blocks {

class ConfigKeys {
 public:
  /// `json_text` nullptr (a host before SDK 0.4) reads as an empty object: every key its default.
  ConfigKeys(const char* json_text, std::string source, std::string block)
      : source_(std::move(source)), block_(std::move(block)) {
    if (json_text == nullptr) return;
    try {
      json_ = nlohmann::json::parse(json_text);
    } catch (const nlohmann::json::exception& error) {
      throw loom::ConfigError(block_ + ": " + source_ + ": not valid JSON (" + error.what() + ")");
    }
    if (!json_.is_object()) throw loom::ConfigError(block_ + ": " + source_ + ": expected a JSON object");
  }

  /// Whether the file sets `key` to a non-null value.
  bool has(const char* key) const { return json_.contains(key) && !json_[key].is_null(); }
  const nlohmann::json& json() const { return json_; }

  [[noreturn]] void refuse(const std::string& key, const std::string& problem) const {
    throw loom::ConfigError(block_ + ": " + source_ + ": " + key + ": " + problem);
  }

  int64_t integer(const char* key, int64_t fallback, int64_t minimum) const {
    if (!has(key)) return fallback;
    const nlohmann::json& value = json_[key];
    if (!value.is_number_integer()) refuse(key, "expected an integer, got " + value.dump());
    const int64_t number = value.get<int64_t>();
    if (number < minimum) refuse(key, "must be at least " + std::to_string(minimum) + ", got " + value.dump());
    return number;
  }
  /// A number in [minimum, below).
  double real(const char* key, double fallback, double minimum, double below) const {
    if (!has(key)) return fallback;
    const nlohmann::json& value = json_[key];
    if (!value.is_number()) refuse(key, "expected a number, got " + value.dump());
    const double number = value.get<double>();
    if (!(number >= minimum && number < below)) {
      std::ostringstream range;
      range << "must be in [" << minimum << ", " << below << "), got " << value.dump();
      refuse(key, range.str());
    }
    return number;
  }
  bool boolean(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    const nlohmann::json& value = json_[key];
    if (!value.is_boolean()) refuse(key, "expected true or false, got " + value.dump());
    return value.get<bool>();
  }
  std::string text(const char* key, const std::string& fallback) const {
    if (!has(key)) return fallback;
    const nlohmann::json& value = json_[key];
    if (!value.is_string()) refuse(key, "expected a string, got " + value.dump());
    return value.get<std::string>();
  }

 private:
  nlohmann::json json_ = nlohmann::json::object();
  std::string source_, block_;
};

}  // namespace loom_blocks
