// Typed, validated access to a component's recipe table.
//
// A component reads every option in its constructor through `Options`. Problems are collected,
// not thrown one at a time, so a user sees all of them at once; each names the recipe file, line,
// column and key path. After construction the plugin macro calls `finish()`, which adds one
// problem per key nobody read ("unknown key 'lrr'; did you mean 'lr'?") and throws
// `ConfigError` with every problem, one per line.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <toml++/toml.h>

#include "loom/sdk/error.hpp"

LOOM_SDK_NAMESPACE_BEGIN

/// Numeric bounds for `Options::get` / `Options::required`: inclusive unless marked open, so
/// `Range{0, 1}` is [0, 1] and `Range::closed_open(0, 1)` is [0, 1). An infinite bound means "no
/// bound": a number option is always finite — NaN and ±inf are refused whatever the range, because
/// NaN compares false with every bound and would otherwise pass any check written with `<`.
struct Range {
  double min;
  double max;
  bool min_open = false;  ///< true: `min` itself is outside
  bool max_open = false;  ///< true: `max` itself is outside

  /// [min, max)
  static constexpr Range closed_open(double min, double max) { return Range{min, max, false, true}; }
  /// (min, max]
  static constexpr Range open_closed(double min, double max) { return Range{min, max, true, false}; }
  /// (min, max)
  static constexpr Range open(double min, double max) { return Range{min, max, true, true}; }
  /// [min, inf): any finite number from `min` on
  static constexpr Range at_least(double min) {
    return Range{min, std::numeric_limits<double>::infinity(), false, true};
  }
  /// (min, inf): any finite number above `min`
  static constexpr Range above(double min) {
    return Range{min, std::numeric_limits<double>::infinity(), true, true};
  }

  /// False for NaN.
  bool contains(double value) const {
    return (min_open ? value > min : value >= min) && (max_open ? value < max : value <= max);
  }

  /// "[0, 1)", "(0, inf)": as messages and docs write the range.
  std::string text() const {
    return std::string(min_open ? "(" : "[") + bound(min) + ", " + bound(max) + (max_open ? ")" : "]");
  }

 private:
  static std::string bound(double v) {
    if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
    std::ostringstream out;
    out << v;
    return out.str();
  }
};

class Options {
 public:
  /// `toml_text`: the table as TOML. `origins`: lines "dotted.key<TAB>file:line:col".
  /// `table_name`: the recipe path of the table ("optimizer"), used in messages.
  Options(std::string_view toml_text, std::string_view origins, std::string table_origin,
          std::string table_name)
      : table_origin_(std::move(table_origin)), table_name_(std::move(table_name)) {
    parse_origins(origins);
    try {
      table_ = toml::parse(toml_text);
    } catch (const toml::parse_error& e) {
      problems_.push_back(table_origin_ + ": " + table_name_ +
                          ": options are not valid TOML: " + std::string(e.description()));
    }
  }

  /// An empty option set (for components created without a recipe table).
  Options() : table_origin_("<defaults>"), table_name_("<defaults>") {}

  /// True when the key is present (reading it this way counts as known, not as consumed).
  bool has(std::string_view key) {
    known_.insert(std::string(key));
    return static_cast<bool>(table_.at_path(key));
  }

  /// A required option; records a problem and returns T{} when missing or malformed.
  template <typename T>
  T required(std::string_view key, std::optional<Range> range = std::nullopt) {
    if (auto value = read<T>(key, range, /*required=*/true)) return *value;
    return T{};
  }

  /// An option with a default.
  template <typename T>
  T get(std::string_view key, T fallback, std::optional<Range> range = std::nullopt) {
    if (auto value = read<T>(key, range, /*required=*/false)) return *value;
    return fallback;
  }

  /// An option with no default; nullopt when absent (or malformed, which is also recorded).
  template <typename T>
  std::optional<T> optional(std::string_view key, std::optional<Range> range = std::nullopt) {
    return read<T>(key, range, /*required=*/false);
  }

  /// A string option restricted to `choices`.
  std::string choice(std::string_view key, std::string fallback, const std::vector<std::string>& choices) {
    std::string value = get<std::string>(key, fallback);
    if (std::find(choices.begin(), choices.end(), value) == choices.end()) {
      std::string list;
      for (const auto& c : choices) list += (list.empty() ? "\"" : ", \"") + c + "\"";
      fail(key, "must be one of " + list + ", got \"" + value + "\"" + suggestion(value, choices));
      return fallback;
    }
    return value;
  }

  /// Records a problem found by the component itself (e.g. two options that contradict).
  void fail(std::string_view key, const std::string& message) {
    problems_.push_back(where(key) + ": " + qualified(key) + ": " + message);
  }

  /// "file:line:col" of a key, or of the table when the key has no recorded origin.
  std::string where(std::string_view key) const {
    for (const auto& [k, origin] : origins_)
      if (k == key) return origin;
    return table_origin_;
  }

  const std::string& table_name() const { return table_name_; }
  const std::vector<std::string>& problems() const { return problems_; }

  /// Adds unknown-key problems and throws ConfigError listing every problem, if any.
  void finish() {
    std::vector<std::string> leaves;
    collect_leaves(table_, "", leaves);
    std::vector<std::string> known(known_.begin(), known_.end());
    for (const auto& leaf : leaves) {
      if (is_known(leaf)) continue;
      problems_.push_back(where(leaf) + ": " + qualified(leaf) + ": unknown key" + suggestion(leaf, known) +
                          known_list());
    }
    if (problems_.empty()) return;
    std::string all;
    for (const auto& p : problems_) all += (all.empty() ? "" : "\n") + p;
    throw ConfigError(all);
  }

  /// Edit distance used for "did you mean" suggestions.
  static size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<size_t> row(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
      size_t diagonal = row[0];
      row[0] = i;
      for (size_t j = 1; j <= b.size(); ++j) {
        const size_t up = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
        diagonal = up;
      }
    }
    return row[b.size()];
  }

  /// "; did you mean 'x'?" for the closest candidate within a small distance, else "".
  static std::string suggestion(std::string_view word, const std::vector<std::string>& candidates) {
    const std::string* best = nullptr;
    size_t best_distance = 0;
    for (const auto& c : candidates) {
      const size_t d = edit_distance(word, c);
      if (best == nullptr || d < best_distance) best = &c, best_distance = d;
    }
    const size_t limit = std::max<size_t>(2, word.size() / 3);
    if (best == nullptr || best_distance > limit) return "";
    return "; did you mean '" + *best + "'?";
  }

 private:
  template <typename T>
  struct is_floating_vector : std::false_type {};
  template <typename E>
  struct is_floating_vector<std::vector<E>> : std::is_floating_point<E> {};

  template <typename T>
  std::optional<T> read(std::string_view key, std::optional<Range> range, bool required) {
    known_.insert(std::string(key));
    toml::node_view<toml::node> node = table_.at_path(key);
    if (!node) {
      if (required) fail(key, "missing required key");
      return std::nullopt;
    }
    std::optional<T> value = convert<T>(*node.node());
    if (!value) {
      fail(key, std::string("expected ") + type_name<T>() + ", got " + describe(*node.node()));
      return std::nullopt;
    }
    if constexpr (std::is_floating_point_v<T>) {
      if (!std::isfinite(*value)) {
        fail(key, "value " + toml_text(*node.node()) + " is not a finite number" +
                      (range ? " (allowed: " + range->text() + ")" : std::string()));
        return std::nullopt;
      }
    }
    if constexpr (is_floating_vector<T>::value) {
      for (size_t i = 0; i < value->size(); ++i)
        if (!std::isfinite((*value)[i])) {
          fail(key, "element " + std::to_string(i + 1) + " is not a finite number");
          return std::nullopt;
        }
    }
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
      if (range && !range->contains(static_cast<double>(*value))) {
        fail(key, "value " + toml_text(*node.node()) + " is out of range " + range->text());
        return std::nullopt;
      }
    }
    return value;
  }

  template <typename T>
  static std::optional<T> convert(const toml::node& node) {
    if constexpr (std::is_same_v<T, bool>) {
      return node.value_exact<bool>();
    } else if constexpr (std::is_integral_v<T>) {
      auto v = node.value_exact<int64_t>();
      if (!v) return std::nullopt;
      // Negative values compare against min() only: cast to uint64_t they would exceed max().
      const bool fits =
          *v < 0 ? *v >= static_cast<int64_t>(std::numeric_limits<T>::min())
                 : static_cast<uint64_t>(*v) <= static_cast<uint64_t>(std::numeric_limits<T>::max());
      if (!fits) return std::nullopt;
      return static_cast<T>(*v);
    } else if constexpr (std::is_floating_point_v<T>) {
      if (node.is_floating_point() || node.is_integer()) return node.value<T>();
      return std::nullopt;
    } else if constexpr (std::is_same_v<T, std::string>) {
      return node.value_exact<std::string>();
    } else {
      // std::vector<E> for a scalar E.
      const toml::array* array = node.as_array();
      if (array == nullptr) return std::nullopt;
      T out;
      for (const auto& element : *array) {
        auto v = convert<typename T::value_type>(element);
        if (!v) return std::nullopt;
        out.push_back(*v);
      }
      return out;
    }
  }

  template <typename T>
  static const char* type_name() {
    if constexpr (std::is_same_v<T, bool>)
      return "a boolean";
    else if constexpr (std::is_integral_v<T>)
      return "an integer";
    else if constexpr (std::is_floating_point_v<T>)
      return "a number";
    else if constexpr (std::is_same_v<T, std::string>)
      return "a string";
    else
      return "an array";
  }

  static std::string describe(const toml::node& node) {
    switch (node.type()) {
      case toml::node_type::string:
        return "string " + toml_text(node);
      case toml::node_type::integer:
        return "integer " + toml_text(node);
      case toml::node_type::floating_point:
        return "number " + toml_text(node);
      case toml::node_type::boolean:
        return "boolean " + toml_text(node);
      case toml::node_type::array:
        return "an array";
      case toml::node_type::table:
        return "a table";
      default:
        return "a date/time";
    }
  }

  static std::string toml_text(const toml::node& node) {
    std::ostringstream out;
    node.visit([&](const auto& n) { out << toml::toml_formatter{n}; });
    return out.str();
  }

  std::string qualified(std::string_view key) const { return table_name_ + "." + std::string(key); }

  std::string known_list() const {
    if (known_.empty()) return " (this component takes no options)";
    std::string list;
    for (const auto& k : known_) list += (list.empty() ? "" : ", ") + k;
    return " (known keys: " + list + ")";
  }

  bool is_known(const std::string& leaf) const {
    for (const auto& k : known_)
      if (leaf == k || (leaf.size() > k.size() && leaf.compare(0, k.size(), k) == 0 && leaf[k.size()] == '.'))
        return true;
    return false;
  }

  static void collect_leaves(const toml::table& table, const std::string& prefix,
                             std::vector<std::string>& out) {
    for (const auto& [key, node] : table) {
      const std::string path =
          prefix.empty() ? std::string(key.str()) : prefix + "." + std::string(key.str());
      if (const toml::table* sub = node.as_table())
        collect_leaves(*sub, path, out);
      else
        out.push_back(path);
    }
  }

  void parse_origins(std::string_view origins) {
    while (!origins.empty()) {
      const size_t end = std::min(origins.find('\n'), origins.size());
      const std::string_view line = origins.substr(0, end);
      const size_t tab = line.find('\t');
      if (tab != std::string_view::npos)
        origins_.emplace_back(std::string(line.substr(0, tab)), std::string(line.substr(tab + 1)));
      origins.remove_prefix(std::min(end + 1, origins.size()));
    }
  }

  toml::table table_;
  std::string table_origin_;
  std::string table_name_;
  std::vector<std::pair<std::string, std::string>> origins_;
  std::set<std::string> known_;
  std::vector<std::string> problems_;
};

LOOM_SDK_NAMESPACE_END
