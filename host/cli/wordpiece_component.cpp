// See wordpiece_component.hpp.
#include "wordpiece_component.hpp"

#include <fmt/format.h>

#include "recipe/errors.hpp"

namespace loom::cli {

host::Component<loom::Tokenizer> create_wordpiece(const GlobalOptions& options, const std::string& vocab,
                                                  bool cased, const std::string& origin) {
  auto registry = make_registry(options, nullptr);
  const host::ComponentEntry* entry = registry->find(LOOM_KIND_TOKENIZER, "wordpiece");
  if (entry == nullptr)
    throw host::PluginLoadError(
        "tokenizer/wordpiece",
        fmt::format("is not available (searched: {}); build the wordpiece plugin or pass "
                    "--plugin-path",
                    fmt::join(registry->searched_directories(), ", ")));
  std::string quoted;  // a TOML basic string
  for (char c : vocab) {
    if (c == '"' || c == '\\') quoted += '\\';
    quoted += c;
  }
  host::ComponentConfig config;
  config.table_name = "tokenizer";
  config.toml = fmt::format("vocab = \"{}\"\ncased = {}\n", quoted, cased ? "true" : "false");
  config.table_origin = origin;
  return registry->create<loom::Tokenizer>(*entry, config, /*dry_run=*/false);
}

}  // namespace loom::cli
