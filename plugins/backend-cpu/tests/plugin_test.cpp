// backend/cpu through the host registry, as a run creates it: options (threads, fused_attention),
// errors.
#include <gtest/gtest.h>

#include "loom/sdk/backend.hpp"
#include "loom/sdk/ops/fused_attention.hpp"
#include "plugin_loading/plugin_registry.hpp"
#include "recipe/errors.hpp"

namespace {

loom::host::Component<loom::Backend> make_cpu(const std::string& toml) {
  loom::host::PluginSearchOptions search;
  search.directories = {LOOM_PLUGIN_DIR};
  search.default_paths = false;
  search.environment = false;
  loom::host::PluginRegistry registry(search);
  const auto* entry = registry.find(LOOM_KIND_BACKEND, "cpu");
  if (entry == nullptr) throw std::runtime_error("backend/cpu not found");
  return registry.create<loom::Backend>(*entry, {"backend", toml, "", "test.toml:3:1"}, false);
}

TEST(BackendCpuPlugin, ThreadsOptionAndAGemmThroughTheInterface) {
  auto backend = make_cpu("threads = 1\n");
  EXPECT_EQ(backend.call([](loom::Backend& b) { return b.threads(); }), 1);
  backend.call([](loom::Backend& b) {
    float a[6] = {1, 2, 3, 4, 5, 6}, w[6] = {1, 0, 0, 1, 1, 1}, c[4];
    b.gemm(loom::Tensor::contiguous(a, loom::DType::f32, {2, 3}), false,
           loom::Tensor::contiguous(w, loom::DType::f32, {2, 3}), true,
           loom::Tensor::contiguous(c, loom::DType::f32, {2, 2}), 1, 0);
    EXPECT_EQ(c[0], 1);  // [1 2 3]·[1 0 0]
    EXPECT_EQ(c[1], 6);  // [1 2 3]·[1 1 1]
    EXPECT_EQ(c[2], 4);  // [4 5 6]·[1 0 0]
    EXPECT_EQ(c[3], 15);
  });
}

TEST(BackendCpuPlugin, DefaultThreadsIsEveryCore) {
  auto backend = make_cpu("");
  EXPECT_GE(backend.call([](loom::Backend& b) { return b.threads(); }), 1);
}

TEST(BackendCpuPlugin, FusedAttentionOptionDecidesWhetherBlocksUseIt) {
  // backend/cpu always offers the op (its reference implementation) but recommends it to blocks
  // only when asked to.
  auto plain = make_cpu("threads = 1\n");
  auto fused = make_cpu("threads = 1\nfused_attention = true\n");
  ASSERT_NE(plain.find<loom::FusedAttention>(), nullptr);
  ASSERT_NE(fused.find<loom::FusedAttention>(), nullptr);
  EXPECT_FALSE(plain.find<loom::FusedAttention>()->fused_attention(64, 512));
  EXPECT_TRUE(fused.find<loom::FusedAttention>()->fused_attention(64, 512));
}

TEST(BackendCpuPlugin, BadOptionsAreReportedWithTheirLocation) {
  try {
    make_cpu("threads = -2\nthreds = 1\n");
    FAIL() << "expected a configuration error";
  } catch (const std::exception& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("threads"), std::string::npos) << message;
    EXPECT_NE(message.find("did you mean 'threads'"), std::string::npos) << message;
  }
}

TEST(BackendCpuPlugin, OpErrorsCrossTheBoundaryWithTheirMessage) {
  auto backend = make_cpu("threads = 1\n");
  try {
    backend.call([](loom::Backend& b) {
      float x[4] = {};
      b.tanh_forward(loom::Tensor::contiguous(x, loom::DType::f32, {4}),
                     loom::Tensor::contiguous(x, loom::DType::f32, {2}));
    });
    FAIL() << "expected an error";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("tanh_forward"), std::string::npos) << e.what();
  }
}

}  // namespace
