// `loom plugins [--json]`: every plugin found, its components, and every file refused with why.
#include <iostream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli_context.hpp"
#include "recipe/errors.hpp"
#include "loom/sdk/component_kind.hpp"

namespace loom::cli {
namespace {

nlohmann::json to_json(const host::PluginRegistry& registry) {
  nlohmann::json out;
  out["plugins"] = nlohmann::json::array();
  for (const auto& plugin : registry.plugins()) {
    const loom_plugin_desc* d = plugin->descriptor;
    nlohmann::json components = nlohmann::json::array();
    for (uint32_t i = 0; i < d->num_components; ++i) {
      const loom_component_desc& c = d->components[i];
      components.push_back({{"name", std::string(loom::kind_name(c.kind)) + "/" + c.name},
                            {"version", c.version ? c.version : ""},
                            {"interface_version", c.interface_version},
                            {"summary", c.summary ? c.summary : ""}});
    }
    out["plugins"].push_back({{"path", plugin->path},
                              {"name", d->name},
                              {"version", d->version},
                              {"abi", fmt::format("{}.{}", d->abi_major, d->abi_minor)},
                              {"sdk_version", d->sdk_version ? d->sdk_version : ""},
                              {"description", d->description ? d->description : ""},
                              {"components", components}});
  }
  out["refused"] = nlohmann::json::array();
  for (const auto& r : registry.refused()) out["refused"].push_back({{"path", r.path}, {"reason", r.reason}});
  out["conflicts"] = nlohmann::json::array();
  for (const auto& c : registry.conflicts())
    out["conflicts"].push_back({{"component", c.component}, {"paths", {c.first_path, c.second_path}}});
  out["searched"] = registry.searched_directories();
  return out;
}

void print_text(const nlohmann::json& listing) {
  for (const auto& p : listing["plugins"]) {
    std::cout << fmt::format("{} {}  (ABI {}, {})\n", p["name"].get<std::string>(),
                             p["version"].get<std::string>(), p["abi"].get<std::string>(),
                             p["path"].get<std::string>());
    for (const auto& c : p["components"])
      std::cout << fmt::format("  {:<32} {}\n", c["name"].get<std::string>(),
                               c["summary"].get<std::string>());
  }
  if (listing["plugins"].empty()) std::cout << "no plugins found\n";
  for (const auto& r : listing["refused"])
    std::cout << fmt::format("refused {}: {}\n", r["path"].get<std::string>(),
                             r["reason"].get<std::string>());
  for (const auto& c : listing["conflicts"])
    std::cout << fmt::format("conflict: {} is provided by {} and {}\n", c["component"].get<std::string>(),
                             c["paths"][0].get<std::string>(), c["paths"][1].get<std::string>());
  std::cout << "searched: ";
  bool first = true;
  for (const auto& dir : listing["searched"])
    std::cout << (first ? "" : ", ") << dir.get<std::string>(), first = false;
  std::cout << "\n";
}

}  // namespace

namespace {

void register_plugins_verb(CLI::App& app, GlobalOptions& options) {
  auto* verb = app.add_subcommand("plugins", "list plugins found, their components, and refused files");
  auto json = std::make_shared<bool>(false);
  verb->add_flag("--json", *json, "print JSON");
  add_plugin_flags(*verb, options);
  verb->callback([&options, json] {
    auto registry = make_registry(options, nullptr);
    const nlohmann::json listing = to_json(*registry);
    if (*json)
      std::cout << listing.dump(2) << "\n";
    else
      print_text(listing);
    if (!registry->conflicts().empty())
      throw host::PluginLoadError("plugins", registry->conflicts()[0].message());
  });
}

const VerbRegistration registration(&register_plugins_verb);

}  // namespace
}  // namespace loom::cli
