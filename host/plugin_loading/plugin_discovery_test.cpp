// Discovery order, file-name filtering, symlinks and shadowing.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>

#include "recipe/errors.hpp"
#include "plugin_loading/plugin_test_support.hpp"

namespace fs = std::filesystem;

namespace loom::host {
namespace {

using testing::fixture_dir;
using testing::fixture_file;
using testing::hermetic;

class TempDir {
 public:
  TempDir() {
    char pattern[] = "/tmp/loom-discovery-XXXXXX";
    path_ = mkdtemp(pattern);
  }
  ~TempDir() { fs::remove_all(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(PluginDiscovery, OnlyLibloomNamesAreConsidered) {
  EXPECT_TRUE(is_plugin_file_name("libloom-comm-local.so"));
  EXPECT_TRUE(is_plugin_file_name("libloom-cuda-sm80.so"));
  EXPECT_FALSE(is_plugin_file_name("libcomm-local.so"));
  EXPECT_FALSE(is_plugin_file_name("libloom-comm-local.so.1"));
  EXPECT_FALSE(is_plugin_file_name("libloom-.so"));
  EXPECT_FALSE(is_plugin_file_name("loom-comm-local.so"));
}

TEST(PluginDiscovery, SymlinkedPluginIsLoadedOnce) {
  TempDir other;
  fs::create_symlink(fixture_file("good", "fixture-good"), other.path() + "/libloom-alias.so");
  PluginRegistry registry(hermetic({fixture_dir("good"), other.path()}));
  EXPECT_EQ(registry.plugins().size(), 1u);
  EXPECT_TRUE(registry.refused().empty());
  EXPECT_TRUE(registry.conflicts().empty());
}

TEST(PluginDiscovery, SamePluginLaterInTheSearchOrderIsShadowed) {
  TempDir other;
  fs::copy_file(fixture_file("good", "fixture-good"), other.path() + "/libloom-fixture-good.so");
  PluginRegistry registry(hermetic({other.path(), fixture_dir("good")}));
  ASSERT_EQ(registry.plugins().size(), 1u);
  EXPECT_EQ(registry.plugins()[0]->path, fs::canonical(other.path() + "/libloom-fixture-good.so").string());
  ASSERT_EQ(registry.refused().size(), 1u);
  EXPECT_NE(registry.refused()[0].reason.find("shadowed by"), std::string::npos);
}

TEST(PluginDiscovery, ExplicitMissingFileIsFatal) {
  EXPECT_THROW(PluginRegistry(hermetic({}, {"/nonexistent/libloom-x.so"})), PluginLoadError);
}

TEST(PluginDiscovery, EnvironmentPathIsSearchedAndDefaultsCanBeTurnedOff) {
  setenv("LOOM_PLUGIN_PATH", (std::string("/nonexistent:") + fixture_dir("good")).c_str(), 1);
  setenv("LOOM_PLUGIN_PATH_ONLY", "1", 1);
  PluginSearchOptions options;  // environment on, defaults requested but disabled by the variable
  PluginRegistry registry(options);
  unsetenv("LOOM_PLUGIN_PATH");
  unsetenv("LOOM_PLUGIN_PATH_ONLY");
  ASSERT_EQ(registry.plugins().size(), 1u);
  EXPECT_EQ(registry.plugins()[0]->name(), "fixture-good");
  const auto& searched = registry.searched_directories();
  EXPECT_EQ(searched, (std::vector<std::string>{"/nonexistent", fixture_dir("good")}));
}

TEST(PluginDiscovery, DefaultPathsEndWithTheInstallDirectoryAndNeverTheCurrentDirectory) {
  PluginSearchOptions options;
  options.environment = false;
  const auto dirs = plugin_search_directories(options);
  ASSERT_EQ(dirs.size(), 2u);
  EXPECT_NE(dirs[0].find("loom/plugins"), std::string::npos);
  EXPECT_TRUE(dirs[1].ends_with("lib/loom/plugins"));
  for (const auto& dir : dirs) EXPECT_NE(dir, fs::current_path().string());
}

TEST(PluginDiscovery, CommLocalPluginProvidesTheLocalCommunicator) {
  PluginRegistry registry(hermetic({LOOM_PLUGIN_DIR}));
  const ComponentEntry* local = registry.find(LOOM_KIND_COMMUNICATOR, "local");
  ASSERT_NE(local, nullptr);
  EXPECT_EQ(local->plugin->name(), "comm-local");
}

}  // namespace
}  // namespace loom::host
