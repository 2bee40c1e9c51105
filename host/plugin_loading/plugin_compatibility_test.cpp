// SDK compatibility rules (docs/plugins.md "Versions"): committed binary plugins built against
// SDK 0.1 and 0.2 keep loading and working; a component with a newer interface version is refused with a
// message naming both versions (a newer ABI major: plugin_loading_test.cpp).
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "loom/sdk/backend.hpp"
#include "loom/sdk/communicator.hpp"
#include "loom/sdk/extended_collectives.hpp"
#include "loom/sdk/ops/device_description.hpp"
#include "loom/sdk/ops/fused_attention.hpp"
#include "plugin_loading/plugin_test_support.hpp"
#include "recipe/errors.hpp"

namespace loom::host {
namespace {

using testing::fixture_file;
using testing::hermetic;

// Committed binary (host/tests/data/sdk-0.1/build-fixture.sh), never rebuilt.
const std::string kSdk01Plugin = std::string(LOOM_TEST_DATA_DIR) + "/sdk-0.1/libloom-fixture-sdk-0.1.so";

// Committed binary (host/tests/data/sdk-0.2/build-fixture.sh): a backend of interface version 2,
// SDK 0.2's Backend2, from before op families became named interfaces.
const std::string kSdk02Plugin = std::string(LOOM_TEST_DATA_DIR) + "/sdk-0.2/libloom-fixture-sdk-0.2.so";

ComponentConfig communicator_config(const std::string& toml) {
  return ComponentConfig{"communicator", toml, "", "test.toml:1:1"};
}

TEST(PluginCompatibility, BinaryBuiltAgainstSdk01LoadsAndWorks) {
  PluginRegistry registry(hermetic({}, {kSdk01Plugin}));
  ASSERT_EQ(registry.plugins().size(), 1u);
  EXPECT_EQ(registry.plugins()[0]->name(), "fixture-sdk-0.1");
  EXPECT_STREQ(registry.plugins()[0]->descriptor->sdk_version, "0.1.0");
  const ComponentEntry* entry = registry.find(LOOM_KIND_COMMUNICATOR, "sdk-0.1");
  ASSERT_NE(entry, nullptr);
  auto comm = registry.create<loom::Communicator>(*entry, communicator_config("world = 4\n"), false);
  EXPECT_EQ(comm.call([](loom::Communicator& c) { return c.size(); }), 4);
  EXPECT_EQ(comm.call([](loom::Communicator& c) { return c.rank(); }), 0);
  float data[3] = {1.0f, -2.0f, 0.5f};
  comm.call([&](loom::Communicator& c) { c.all_reduce_sum(data, 3); });
  EXPECT_FLOAT_EQ(data[0], 4.0f);
  EXPECT_FLOAT_EQ(data[1], -8.0f);
  EXPECT_FLOAT_EQ(data[2], 2.0f);
  EXPECT_EQ(comm.find<loom::ExtendedCollectives>(), nullptr);  // driven through Communicator alone
}

TEST(PluginCompatibility, Sdk01BinaryReportsOptionProblemsAndErrorsThroughTheBoundary) {
  PluginRegistry registry(hermetic({}, {kSdk01Plugin}));
  const ComponentEntry& entry = *registry.find(LOOM_KIND_COMMUNICATOR, "sdk-0.1");
  try {
    registry.create<loom::Communicator>(entry, communicator_config("world = 99\nwrold = 2\n"), true);
    FAIL() << "bad options were accepted";
  } catch (const RecipeError& e) {
    ASSERT_EQ(e.problems().size(), 2u) << e.what();
    EXPECT_NE(e.problems()[0].find("world: value 99 is out of range [1, 64]"), std::string::npos) << e.what();
    EXPECT_NE(e.problems()[1].find("wrold: unknown key; did you mean 'world'?"), std::string::npos)
        << e.what();
  }
  auto fancy = registry.create<loom::Communicator>(entry, communicator_config("label = \"fancy\"\n"), false);
  try {
    fancy.call([](loom::Communicator& c) { c.barrier(); });
    FAIL() << "barrier did not throw";
  } catch (const PluginError& e) {
    EXPECT_NE(std::string(e.what()).find("barrier of the SDK 0.1 fixture fails"), std::string::npos)
        << e.what();
  }
}

// The SDK 0.2 backend loads, serves the version-1 op set, reports its errors through the boundary,
// and, having no query_interface, answers "not offered" for every named interface: the host and
// blocks then take their paths for a backend without them (unfused attention, no device line).
TEST(PluginCompatibility, BinaryBuiltAgainstSdk02LoadsAsABackendWithoutNamedInterfaces) {
  PluginRegistry registry(hermetic({}, {kSdk02Plugin}));
  ASSERT_EQ(registry.plugins().size(), 1u);
  EXPECT_STREQ(registry.plugins()[0]->descriptor->sdk_version, "0.2.0");
  const ComponentEntry* entry = registry.find(LOOM_KIND_BACKEND, "sdk-0.2");
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->descriptor->interface_version, 2u);
  EXPECT_EQ(entry->interfaces(), nullptr);
  auto backend = registry.create<loom::Backend>(
      *entry, ComponentConfig{"backend", "label = \"x\"\n", "", "t:1:1"}, false);
  EXPECT_EQ(backend.find<loom::FusedAttention>(), nullptr);
  EXPECT_EQ(backend.find<loom::DeviceDescription>(), nullptr);
  const float values[4] = {0, 0, 0, 0};
  float back[4] = {};
  void* memory = backend.call([&](loom::Backend& b) { return b.allocate(sizeof values); });
  ASSERT_NE(memory, nullptr);
  backend.call([&](loom::Backend& b) { b.copy_from_host(memory, values, sizeof values); });
  backend.call([&](loom::Backend& b) {
    b.fill(loom::Tensor::contiguous(memory, loom::DType::f32, {4}, loom::Device{}), 2.5);
  });
  backend.call([&](loom::Backend& b) { b.copy_to_host(back, memory, sizeof back); });
  for (float v : back) EXPECT_EQ(v, 2.5f);
  try {
    backend.call([&](loom::Backend& b) {
      b.zero(loom::Tensor::contiguous(memory, loom::DType::f32, {4}, loom::Device{}));
    });
    FAIL() << "zero did not throw";
  } catch (const PluginError& e) {
    EXPECT_NE(std::string(e.what()).find("zero is not implemented by the SDK 0.2 fixture backend"),
              std::string::npos)
        << e.what();
  }
  backend.call([&](loom::Backend& b) { b.deallocate(memory); });
}

TEST(PluginCompatibility, NewerInterfaceVersionIsRefusedNamingBothVersions) {
  try {
    PluginRegistry registry(hermetic({}, {fixture_file("newer_interface", "fixture-newer-interface")}));
    FAIL() << "a component with a newer interface version was loaded";
  } catch (const PluginLoadError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("communicator/newer-interface implements communicator interface version 3"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find(fmt::format("newer than this host's version 2 (SDK {})", loom::kSdkVersion)),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("upgrade Loom"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace loom::host
