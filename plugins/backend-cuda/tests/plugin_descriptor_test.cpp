// The built plugin through its C entry point (no host, no GPU needed): the descriptor names
// backend/cuda at interface version 2, a dry run validates options without a device, unknown
// options are refused (LOOM_CUDA_SYNC_CHECK too), and without a GPU construction fails as
// "unsupported", never a crash; a dry-run backend offers its named interfaces (fused attention, the
// device description, ResidualLayerNorm and its transfer counts, all zero).
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "cuda_test_support.hpp"
#include "loom/sdk/backend.hpp"
#include "loom/sdk/interfaces.hpp"
#include "loom/sdk/ops/device_description.hpp"
#include "loom/sdk/ops/fused_attention.hpp"
#include "loom/sdk/ops/geglu.hpp"
#include "loom/sdk/ops/residual_layernorm.hpp"
#include "loom/sdk/ops/rotary_embedding.hpp"
#include "loom/sdk/ops/transfer_counts.hpp"
#include "loom/sdk/ops/windowed_attention.hpp"
#include "loom/sdk/plugin_abi.h"

namespace loom_cuda_test {
namespace {

class PluginDescriptorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // LOOM_BACKEND_CUDA_PLUGIN in the environment: the plugin of an installed tree instead of the
    // build's (scripts/gpu-check runs this binary from an unpacked package).
    const char* installed = std::getenv("LOOM_BACKEND_CUDA_PLUGIN");
    handle_ = dlopen(installed != nullptr && *installed != '\0' ? installed : LOOM_BACKEND_CUDA_PLUGIN,
                     RTLD_NOW | RTLD_LOCAL);
    ASSERT_NE(handle_, nullptr) << dlerror();
    const auto query = reinterpret_cast<const loom_plugin_desc* (*)()>(dlsym(handle_, "loom_plugin_query"));
    ASSERT_NE(query, nullptr);
    plugin_ = query();
    ASSERT_NE(plugin_, nullptr);
  }
  void TearDown() override {
    if (handle_ != nullptr) dlclose(handle_);
  }
  /// Runs the component's factory on `toml`; returns the status and fills `message`. The object is
  /// destroyed, or handed to `*kept` (the caller destroys it) when `kept` is given.
  loom_status create(const std::string& toml, bool dry_run, std::string& message, void** kept = nullptr) {
    const loom_component_desc& component = plugin_->components[0];
    loom_create_args args{};
    args.struct_size = sizeof args;
    args.config_toml = toml.data();
    args.config_length = toml.size();
    args.config_origins = "";
    args.config_origins_length = 0;
    args.table_origin = "test.toml:1:1";
    args.dry_run = dry_run ? 1 : 0;
    args.host = nullptr;
    args.table_name = "backend";
    char text[1024] = {};
    loom_error_buffer error{text, sizeof text};
    void* made = nullptr;
    const loom_status status = component.create(&args, &made, &error);
    message = text;
    if (kept != nullptr)
      *kept = made;
    else if (status == LOOM_OK && made != nullptr)
      component.destroy(made);
    return status;
  }

  void* handle_ = nullptr;
  const loom_plugin_desc* plugin_ = nullptr;
};

TEST_F(PluginDescriptorTest, DescribesBackendCudaOfferingFusedAttentionAndItsDevice) {
  EXPECT_EQ(plugin_->magic, static_cast<uint32_t>(LOOM_PLUGIN_MAGIC));
  EXPECT_STREQ(plugin_->name, "backend-cuda");
  ASSERT_EQ(plugin_->num_components, 1u);
  const loom_component_desc& component = plugin_->components[0];
  EXPECT_STREQ(component.name, "cuda");
  EXPECT_EQ(component.kind, static_cast<uint32_t>(LOOM_KIND_BACKEND));
  EXPECT_EQ(component.interface_version, loom::Backend::kInterfaceVersion);
  ASSERT_NE(component.query_interface, nullptr);
  // Asked about a null object, a component answers nullptr whatever the name; what it offers is
  // checked on a dry-run backend below.
  EXPECT_EQ(component.query_interface(nullptr, loom::FusedAttention::kInterfaceName, 1), nullptr);
}

TEST_F(PluginDescriptorTest, ADryRunBackendOffersItsNamedInterfacesAndCountsNoWaits) {
  const loom_component_desc& component = plugin_->components[0];
  std::string message;
  void* made = nullptr;
  ASSERT_EQ(create("", true, message, &made), LOOM_OK) << message;
  ASSERT_NE(made, nullptr);
  const auto* counter = loom::find_interface<loom::TransferCounter>(component.query_interface, made);
  ASSERT_NE(counter, nullptr) << "backend/cuda does not offer " << loom::TransferCounter::kInterfaceName;
  const loom::TransferCounts counts = counter->transfer_counts();
  EXPECT_EQ(counts.device_to_host_copies, 0u);
  EXPECT_EQ(counts.synchronizations, 0u);
  EXPECT_EQ(counts.host_to_device_copies, 0u);
  EXPECT_NE(loom::find_interface<loom::FusedAttention>(component.query_interface, made), nullptr);
  EXPECT_NE(loom::find_interface<loom::DeviceDescription>(component.query_interface, made), nullptr);
  EXPECT_NE(loom::find_interface<loom::ResidualLayerNorm>(component.query_interface, made), nullptr);
  EXPECT_NE(loom::find_interface<loom::WindowedAttention>(component.query_interface, made), nullptr);
  EXPECT_NE(loom::find_interface<loom::RotaryEmbedding>(component.query_interface, made), nullptr);
  EXPECT_NE(loom::find_interface<loom::GatedGelu>(component.query_interface, made), nullptr);
  component.destroy(made);
}

TEST_F(PluginDescriptorTest, DryRunValidatesOptionsWithoutADevice) {
  std::string message;
  EXPECT_EQ(create("device = -1\ntf32 = true\n", true, message), LOOM_OK) << message;
  EXPECT_EQ(create("devise = 1\n", true, message), LOOM_E_INVALID_CONFIG);
  EXPECT_NE(message.find("devise"), std::string::npos) << message;
  EXPECT_EQ(create("device = -2\n", true, message), LOOM_E_INVALID_CONFIG) << message;
  EXPECT_EQ(create("tf32 = 3\n", true, message), LOOM_E_INVALID_CONFIG) << message;
  EXPECT_EQ(create("sync_check = true\n", true, message), LOOM_OK) << message;
  EXPECT_EQ(create("sync_check = 1\n", true, message), LOOM_E_INVALID_CONFIG) << message;
  EXPECT_EQ(create("tensor_core_attention = false\n", true, message), LOOM_OK) << message;
  EXPECT_EQ(create("tensor_core_attention = \"no\"\n", true, message), LOOM_E_INVALID_CONFIG) << message;
}

TEST_F(PluginDescriptorTest, SyncCheckEnvironmentVariableIsValidated) {
  std::string message;
  setenv("LOOM_CUDA_SYNC_CHECK", "yes", 1);
  EXPECT_EQ(create("", true, message), LOOM_E_INVALID_CONFIG) << message;
  EXPECT_NE(message.find("LOOM_CUDA_SYNC_CHECK = \"yes\": use 1"), std::string::npos) << message;
  setenv("LOOM_CUDA_SYNC_CHECK", "1", 1);
  EXPECT_EQ(create("", true, message), LOOM_OK) << message;
  unsetenv("LOOM_CUDA_SYNC_CHECK");
}

TEST_F(PluginDescriptorTest, WithoutAGpuConstructionIsUnsupported) {
  if (no_cuda_device_reason().empty())
    GTEST_SKIP() << "a CUDA device is present: this test covers machines without one";
  std::string message;
  EXPECT_EQ(create("", false, message), LOOM_E_UNSUPPORTED) << message;
  EXPECT_NE(message.find("backend/cuda: no CUDA device (cudaGetDeviceCount: "), std::string::npos) << message;
}

}  // namespace
}  // namespace loom_cuda_test
