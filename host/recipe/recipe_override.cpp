// `--set a.b.c=value`: replaces or adds one recipe value from the command line.
//
// Every table on the path must exist (a typo is an error with a suggestion). An existing value
// keeps its type: the text must parse as a TOML value of that type (integers are accepted where
// a float stands; strings need no quotes). A new key takes the TOML value, or the raw text as a
// string when it is not a TOML value; the component then validates it like any other key.
#include <fmt/format.h>

#include "recipe/errors.hpp"
#include "recipe/recipe.hpp"
#include "loom/sdk/options.hpp"

namespace loom::host {
namespace {

std::vector<std::string> split_path(const std::string& dotted) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t dot = dotted.find('.', start);
    parts.push_back(dotted.substr(start, dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return parts;
}

const char* type_name(toml::node_type type) {
  switch (type) {
    case toml::node_type::string:
      return "a string";
    case toml::node_type::integer:
      return "an integer";
    case toml::node_type::floating_point:
      return "a number";
    case toml::node_type::boolean:
      return "a boolean";
    case toml::node_type::array:
      return "an array";
    case toml::node_type::table:
      return "a table";
    default:
      return "a date/time";
  }
}

// Parses `text` as one TOML value; nullptr when it is not one.
std::unique_ptr<toml::node> parse_value(const std::string& text) {
  try {
    toml::table parsed = toml::parse("value = " + text);
    toml::node* node = parsed.get("value");
    if (node == nullptr) return nullptr;
    return node->visit([](auto& n) -> std::unique_ptr<toml::node> {
      return std::make_unique<std::remove_cvref_t<decltype(n)>>(n);
    });
  } catch (const toml::parse_error&) {
    return nullptr;
  }
}

std::vector<std::string> keys_of(const toml::table& table) {
  std::vector<std::string> keys;
  for (const auto& [key, node] : table) keys.emplace_back(key.str());
  return keys;
}

}  // namespace

void Recipe::apply_override(const std::string& assignment) {
  const std::string where = "--set " + assignment;
  const size_t equals = assignment.find('=');
  if (equals == std::string::npos || equals == 0)
    throw RecipeError(where + ": expected KEY=VALUE, e.g. --set optimizer.lr=1e-3");
  const std::string key = assignment.substr(0, equals);
  const std::string text = assignment.substr(equals + 1);
  const std::vector<std::string> parts = split_path(key);

  toml::table* table = &root_;
  std::string walked;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    walked += (walked.empty() ? "" : ".") + parts[i];
    toml::node* next = table->get(parts[i]);
    if (next == nullptr || !next->is_table())
      throw RecipeError(fmt::format("{}: the recipe has no table '{}'{}", where, walked,
                                    next == nullptr
                                        ? loom::Options::suggestion(parts[i], keys_of(*table))
                                        : " (it is " + std::string(type_name(next->type())) + ")"));
    table = next->as_table();
  }

  const std::string& leaf = parts.back();
  toml::node* existing = table->get(leaf);
  if (existing != nullptr && existing->is_table())
    throw RecipeError(fmt::format("{}: '{}' is a table; set one of its keys instead", where, key));

  std::unique_ptr<toml::node> value;
  const bool quoted = text.size() >= 2 && (text.front() == '"' || text.front() == '\'');
  if (existing != nullptr && existing->is_string() && !quoted) {
    value = std::make_unique<toml::value<std::string>>(text);
  } else {
    value = parse_value(text);
    if (existing == nullptr && value == nullptr) value = std::make_unique<toml::value<std::string>>(text);
  }
  if (existing != nullptr) {
    if (value == nullptr)
      throw RecipeError(fmt::format("{}: '{}' is not a valid value; {} expects {} like the recipe's ({})",
                                    where, text, key, type_name(existing->type()), origin(key)));
    if (existing->is_floating_point() && value->is_integer())
      value = std::make_unique<toml::value<double>>(static_cast<double>(*value->value<int64_t>()));
    if (value->type() != existing->type())
      throw RecipeError(fmt::format("{}: {} expects {} like the recipe's value at {}, got {}", where, key,
                                    type_name(existing->type()), origin(key), type_name(value->type())));
  }
  value->visit([&](auto& v) { table->insert_or_assign(leaf, std::move(v)); });
  origins_[key] = where;
}

}  // namespace loom::host
