// The guard around every call into a component: a plugin's IoError (a missing or malformed data
// file) is the user's input error (InputError, exit 2), anything else a PluginError (exit 1), both
// naming the plugin and the component.
#include "plugin_loading/component.hpp"

#include <gtest/gtest.h>

#include "loom/sdk/error.hpp"

namespace loom::host {
namespace {

struct Reader {
  int read(bool malformed) {
    if (malformed) throw loom::IoError("data.tsv:3: has 2 tab-separated columns, task \"cola\" needs 4");
    throw loom::Error("out of memory on purpose");
  }
};

TEST(ComponentGuard, DataFileErrorsAreInputErrorsOthersPluginErrors) {
  const Component<Reader> reader(std::make_shared<Reader>(), "datasets", "dataset/text-classification");
  try {
    reader.call([](Reader& r) { return r.read(true); });
    FAIL() << "no exception";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(),
                 "plugin 'datasets', component dataset/text-classification: data.tsv:3: has 2 tab-separated "
                 "columns, task \"cola\" needs 4");
  }
  EXPECT_THROW(reader.call([](Reader& r) { return r.read(false); }), PluginError);
}

}  // namespace
}  // namespace loom::host
