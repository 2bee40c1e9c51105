// communicator/local through the host, as a run uses it.
#include <gtest/gtest.h>

#include "recipe/errors.hpp"
#include "plugin_loading/plugin_registry.hpp"
#include "loom/sdk/communicator.hpp"

namespace {

loom::host::Component<loom::Communicator> make_local(const std::string& toml = "") {
  loom::host::PluginSearchOptions search;
  search.directories = {LOOM_PLUGIN_DIR};
  search.default_paths = false;
  search.environment = false;
  loom::host::PluginRegistry registry(search);
  const auto* entry = registry.find(LOOM_KIND_COMMUNICATOR, "local");
  if (entry == nullptr) throw std::runtime_error("communicator/local not found");
  return registry.create<loom::Communicator>(*entry, {"communicator", toml, "", "test:1:1"}, false);
}

TEST(LocalCommunicator, IsRankZeroOfOne) {
  auto comm = make_local();
  EXPECT_EQ(comm.call([](loom::Communicator& c) { return c.rank(); }), 0);
  EXPECT_EQ(comm.call([](loom::Communicator& c) { return c.size(); }), 1);
}

TEST(LocalCommunicator, CollectivesOverOneRankLeaveDataUnchanged) {
  auto comm = make_local();
  std::vector<float> data{1.5f, -2.0f, 3.25f};
  comm.call([&](loom::Communicator& c) {
    c.all_reduce_sum(data.data(), data.size());
    c.all_reduce_mean(data.data(), data.size());
    c.broadcast(data.data(), data.size() * sizeof(float), 0);
    c.barrier();
  });
  EXPECT_EQ(data, (std::vector<float>{1.5f, -2.0f, 3.25f}));
}

TEST(LocalCommunicator, BroadcastFromAnotherRankIsAnError) {
  auto comm = make_local();
  float x = 0;
  EXPECT_THROW(comm.call([&](loom::Communicator& c) { c.broadcast(&x, sizeof(x), 1); }),
               loom::host::PluginError);
}

TEST(LocalCommunicator, RejectsUnknownOptions) {
  EXPECT_THROW(make_local("threads = 2\n"), loom::host::RecipeError);
}

}  // namespace
