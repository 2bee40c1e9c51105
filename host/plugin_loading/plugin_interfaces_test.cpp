// Named interfaces (loom/sdk/interfaces.hpp): a component answers for exactly the interfaces and
// versions it lists, through the right base-class pointer; components of plugins built before
// SDK 0.3 (no query_interface in their descriptor) answer nullptr to everything.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "loom/sdk/backend.hpp"
#include "loom/sdk/communicator.hpp"
#include "loom/sdk/interfaces.hpp"
#include "loom/sdk/ops/device_description.hpp"
#include "loom/sdk/ops/fused_attention.hpp"
#include "loom/sdk/plugin.hpp"
#include "plugin_loading/plugin_test_support.hpp"

namespace loom::host {
namespace {

using testing::hermetic;

// Two small interfaces and a class that implements a kind and both, so that the interface
// pointers differ from the object's address (multiple inheritance moves them).
struct Kind {
  static constexpr loom_component_kind kKind = LOOM_KIND_DATASET;
  static constexpr unsigned kInterfaceVersion = 1;
  static constexpr const char* kRecipeTable = "test";
  virtual ~Kind() = default;
  int64_t kind_field = 1;
};
class Hello {
 public:
  static constexpr const char* kInterfaceName = "test.hello";
  static constexpr uint32_t kInterfaceVersion = 2;
  virtual std::string hello() const = 0;

 protected:
  ~Hello() = default;
};
class Count {
 public:
  static constexpr const char* kInterfaceName = "test.count";
  static constexpr uint32_t kInterfaceVersion = 1;
  virtual int count() const = 0;

 protected:
  ~Count() = default;
};
class Both final : public Kind, public Hello, public Count {
 public:
  Both() = default;
  explicit Both(loom::ComponentContext&) {}
  std::string hello() const override { return "hello"; }
  int count() const override { return 7; }
};

TEST(NamedInterfaces, AnswersEachListedInterfaceThroughItsOwnBase) {
  Both both;
  void* object = static_cast<Kind*>(&both);
  const loom_query_interface_fn query = &loom::detail::query_interface<Kind, Both, Hello, Count>;
  Hello* hello = loom::find_interface<Hello>(query, object);
  Count* count = loom::find_interface<Count>(query, object);
  ASSERT_EQ(hello, static_cast<Hello*>(&both));
  ASSERT_EQ(count, static_cast<Count*>(&both));
  EXPECT_NE(static_cast<void*>(count), object);  // the adjustment is real, not the object address
  EXPECT_EQ(hello->hello(), "hello");
  EXPECT_EQ(count->count(), 7);
}

TEST(NamedInterfaces, OtherVersionsAndNamesAndOlderComponentsAnswerNull) {
  Both both;
  void* object = static_cast<Kind*>(&both);
  const loom_query_interface_fn query = &loom::detail::query_interface<Kind, Both, Hello>;
  EXPECT_EQ(query(object, "test.hello", 1), nullptr);  // version 2 is offered, not 1
  EXPECT_EQ(query(object, "test.hello", 3), nullptr);
  EXPECT_EQ(query(object, "test.count", 1), nullptr);  // not listed, though implemented
  EXPECT_EQ(query(object, "test.hell", 2), nullptr);
  EXPECT_EQ(query(object, nullptr, 2), nullptr);
  EXPECT_EQ(query(nullptr, "test.hello", 2), nullptr);
  EXPECT_EQ(loom::find_interface<Hello>(nullptr, object), nullptr);  // no query_interface at all
}

TEST(NamedInterfaces, ComponentDescriptorsCarryTheirQueryOnlyWhenSomethingIsOffered) {
  constexpr loom_component_desc plain = loom::component<Kind, Both>("plain", "0.1.0", "x");
  constexpr loom_component_desc offering =
      loom::component<Kind, Both>("offering", "0.1.0", "x", loom::offers<Hello, Count>{});
  EXPECT_EQ(plain.query_interface, nullptr);
  ASSERT_NE(offering.query_interface, nullptr);
  Both both;
  EXPECT_EQ(offering.query_interface(static_cast<Kind*>(&both), "test.count", 1), static_cast<Count*>(&both));
}

ComponentConfig backend_config(const std::string& toml = "") {
  return ComponentConfig{"backend", toml, "", "test.toml:1:1"};
}

TEST(NamedInterfaces, BackendCpuOffersFusedAttentionAndItsDevice) {
  PluginRegistry registry(hermetic({LOOM_PLUGIN_DIR}));
  const ComponentEntry* entry = registry.find(LOOM_KIND_BACKEND, "cpu");
  ASSERT_NE(entry, nullptr);
  ASSERT_NE(entry->interfaces(), nullptr);
  auto backend = registry.create<loom::Backend>(*entry, backend_config("threads = 1\n"), false);
  const loom::DeviceDescription* device = backend.find<loom::DeviceDescription>();
  ASSERT_NE(device, nullptr);
  EXPECT_STREQ(device->device_info().name, "CPU");
  const loom::FusedAttention* attention = backend.find<loom::FusedAttention>();
  ASSERT_NE(attention, nullptr);
  EXPECT_FALSE(attention->fused_attention(64, 128));  // offered, but not recommended without the option
  EXPECT_EQ(entry->interfaces()(static_cast<void*>(backend.get()), loom::FusedAttention::kInterfaceName, 2),
            nullptr);
}

TEST(NamedInterfaces, CommunicatorLocalOffersNothing) {
  PluginRegistry registry(hermetic({LOOM_PLUGIN_DIR}));
  const ComponentEntry* entry = registry.find(LOOM_KIND_COMMUNICATOR, "local");
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry->interfaces(), nullptr);
  auto communicator = registry.create<loom::Communicator>(
      *entry, ComponentConfig{"communicator", "", "", "test.toml:1:1"}, false);
  EXPECT_EQ(communicator.find<loom::FusedAttention>(), nullptr);
}

}  // namespace
}  // namespace loom::host
