// Every policy's decision from a non-finite flag in backend memory (BackendPrecision, the backend
// path of a training step) equals its decision from the same answer on the host, through the same
// transitions (loss-scale back-off and growth, skip counters, the diagnosis at the floor); a flag
// of the wrong dtype, size or device is refused by name.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "loom/sdk/backend.hpp"
#include "loom/sdk/backend_precision.hpp"
#include "precision_loader.hpp"

namespace {

using loom_precision_test::load_policy;

loom::host::Component<loom::Backend> cpu_backend() {
  loom::host::PluginSearchOptions search;
  search.directories = {LOOM_PLUGIN_DIR};
  search.default_paths = false;
  search.environment = false;
  loom::host::PluginRegistry registry(search);
  return registry.create<loom::Backend>(*registry.find(LOOM_KIND_BACKEND, "cpu"),
                                        {"backend", "threads = 1\n", "", "test.toml:1:1"}, false);
}

TEST(BackendPrecision, DecidesFromTheFlagAsFromTheHostCheck) {
  auto backend = cpu_backend();
  loom::Buffer flag(*backend.get(), sizeof(int32_t));
  const loom::Tensor view = flag.view(loom::DType::i32, {1});
  const bool sequence[] = {false, true, false, false, false, true, true, false};
  for (const char* name : {"fp32", "bf16-mixed", "fp16-mixed"}) {
    const std::string options = name == std::string("fp16-mixed") ? "growth_interval = 2\n" : "";
    auto on_host = load_policy(name, options), from_flag = load_policy(name, options);
    loom::BackendPrecision* deciding = from_flag.find<loom::BackendPrecision>();
    ASSERT_NE(deciding, nullptr) << name << " offers no BackendPrecision";
    for (bool nonfinite : sequence) {
      const int32_t value = nonfinite ? 1 : 0;
      backend.get()->copy_from_host(flag.data(), &value, sizeof value);
      const loom::PrecisionDecision expected = on_host.get()->after_backward(nonfinite);
      const loom::PrecisionDecision got = deciding->after_backward_from_flag(*backend.get(), view);
      EXPECT_EQ(got.apply, expected.apply) << name;
      EXPECT_EQ(got.grad_scale, expected.grad_scale) << name;
      EXPECT_EQ(got.loss_scale, expected.loss_scale) << name;
    }
    EXPECT_EQ(from_flag.get()->skipped_steps(), 3u) << name;
    const loom::LossScalerState a = on_host.get()->state(), b = from_flag.get()->state();
    EXPECT_EQ(a.loss_scale, b.loss_scale) << name;
    EXPECT_EQ(a.clean_steps, b.clean_steps) << name;
    EXPECT_EQ(a.consecutive_skips, b.consecutive_skips) << name;
  }
}

TEST(BackendPrecision, ThrowsTheSameDiagnosisAtTheLossScaleFloor) {
  auto backend = cpu_backend();
  int32_t set = 1;
  auto policy = load_policy("fp16-mixed", "initial_scale = 2.0\nmin_scale = 1.0\n");
  loom::BackendPrecision& deciding = *policy.find<loom::BackendPrecision>();
  const loom::Tensor flag = loom::Tensor::contiguous(&set, loom::DType::i32, {1});
  EXPECT_FALSE(deciding.after_backward_from_flag(*backend.get(), flag).apply);  // 2 → 1
  try {
    deciding.after_backward_from_flag(*backend.get(), flag);
    ADD_FAILURE() << "an overflow at the minimum loss scale did not stop the run";
  } catch (const loom::Error& e) {
    EXPECT_NE(std::string(e.what()).find("fp16 loss scale is at its minimum"), std::string::npos) << e.what();
  }
}

TEST(BackendPrecision, RefusesAFlagThatIsNotOneI32OnTheBackend) {
  auto backend = cpu_backend();
  auto policy = load_policy("bf16-mixed");
  loom::BackendPrecision& deciding = *policy.find<loom::BackendPrecision>();
  int64_t wide = 0;
  int32_t pair[2] = {0, 0};
  const loom::Tensor wrong[] = {
      loom::Tensor::contiguous(&wide, loom::DType::i64, {1}),
      loom::Tensor::contiguous(pair, loom::DType::i32, {2}),
      loom::Tensor::contiguous(pair, loom::DType::i32, {1}, loom::Device{loom::DeviceType::cuda, 0}),
      loom::Tensor{},
  };
  for (const loom::Tensor& flag : wrong) {
    try {
      deciding.after_backward_from_flag(*backend.get(), flag);
      ADD_FAILURE() << flag.describe() << " was accepted as a flag";
    } catch (const loom::Error& e) {
      EXPECT_NE(std::string(e.what()).find("expected i32[1] on the backend's device"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_EQ(policy.get()->skipped_steps(), 0u);  // nothing was decided
}

}  // namespace
