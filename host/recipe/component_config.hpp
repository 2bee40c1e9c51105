// A component's options as they cross the plugin boundary: TOML text, key origins, table origin.
#pragma once

#include <string>

namespace loom::host {

struct ComponentConfig {
  std::string table_name;    // recipe table, e.g. "optimizer"
  std::string toml;          // the table without `component`/`plugin`, as TOML
  std::string origins;       // lines "dotted.key<TAB>file:line:col"
  std::string table_origin;  // "file:line:col" of the table, or a description
};

}  // namespace loom::host
