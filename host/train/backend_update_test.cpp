// BackendUpdate on backend/cpu-opaque (memory the host cannot dereference, transfers counted by
// its TransferCounter): deciding a step reads one flag and updating it moves nothing — exactly one
// copy to the host and none from it per step, skipped or applied — and the weights it leaves are
// the host optimizer's bit for bit, through fp16 loss scaling and a skipped overflow step. The
// path is declined under LOOM_HOST_OPTIMIZER=1 and for several ranks on device memory. Given a
// 16-bit working copy, the optimizer's passes write it where the backend offers
// OptimizerWorkingCopy — no refresh after an update, the copy the cast of the master weights bit for
// bit after every step — and the host refreshes it after every applied update where it does not.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "loom/sdk/ops/transfer_counts.hpp"
#include "plugin_loading/plugin_test_support.hpp"
#include "train/backend_update.hpp"

namespace loom::host {
namespace {

template <typename Interface>
Component<Interface> create(const PluginRegistry& registry, const char* name, const std::string& toml) {
  const auto* entry = registry.find(Interface::kKind, name);
  if (entry == nullptr) throw std::runtime_error(std::string("no component ") + name);
  return registry.create<Interface>(*entry, {Interface::kRecipeTable, toml, "", "test.toml:1:1"}, false);
}

PluginRegistry test_registry() {
  return PluginRegistry(testing::hermetic({testing::fixture_dir("opaque_backend"), LOOM_PLUGIN_DIR}));
}

struct Layout {
  std::vector<std::string> names = {"a.weight", "a.bias", "b.LayerNorm.weight"};
  std::vector<loom::ParameterSegment> segments;
  size_t total = 0;
  Layout() {
    const size_t counts[] = {40'001, 100, 64};
    size_t offset = 2;
    for (size_t i = 0; i < 3; ++i) {
      segments.push_back({names[i].c_str(), offset, counts[i], loom::DecayRule::by_name});
      offset += counts[i] + 3;
    }
    total = offset;
  }
};

float value(size_t i, size_t salt) {
  return static_cast<float>(static_cast<int64_t>((i * 2654435761u + salt * 97) % 2001) - 1000) * 1e-5f;
}

TEST(BackendUpdate, ReadsOneFlagPerStepAndMatchesTheHostOptimizer) {
  const PluginRegistry registry = test_registry();
  const Layout layout;
  RunComponents c;
  c.backend = create<loom::Backend>(registry, "cpu-opaque", "threads = 1\n");
  c.optimizer = create<loom::Optimizer>(registry, "nvlamb", "lr = 0.01\n");
  c.precision = create<loom::Precision>(registry, "fp16-mixed", "initial_scale = 1024.0\n");
  auto host_optimizer = create<loom::Optimizer>(registry, "nvlamb", "lr = 0.01\n");
  auto host_precision = create<loom::Precision>(registry, "fp16-mixed", "initial_scale = 1024.0\n");
  loom::Backend& backend = *c.backend.get();
  const loom::TransferCounter* counter = c.backend.find<loom::TransferCounter>();
  ASSERT_NE(counter, nullptr);

  std::vector<float> weights(layout.total);
  for (size_t i = 0; i < layout.total; ++i) weights[i] = value(i, 1);
  const auto n = static_cast<int64_t>(layout.total);
  loom::Buffer master(backend, layout.total * sizeof(float)), grads(backend, layout.total * sizeof(float));
  backend.copy_from_host(master.data(), weights.data(), layout.total * sizeof(float));
  c.optimizer.get()->setup(layout.segments.data(), layout.segments.size(), layout.total);
  host_optimizer.get()->setup(layout.segments.data(), layout.segments.size(), layout.total);
  int refreshes = 0;
  const std::unique_ptr<BackendUpdate> update = BackendUpdate::attach_if_offered(
      c,
      {backend, master.view(loom::DType::f32, {n}), grads.view(loom::DType::f32, {n}), [&] { ++refreshes; }, {}},
      1);
  ASSERT_NE(update, nullptr)
      << "backend/cpu-opaque, optimizer/nvlamb and precision/fp16-mixed offer the path";

  int applied = 0;
  double host_norm = 0;
  for (size_t step = 0; step < 6; ++step) {
    const double scale = host_precision.get()->loss_scale();
    EXPECT_EQ(c.precision.get()->loss_scale(), scale);
    std::vector<float> g(layout.total);
    for (size_t i = 0; i < layout.total; ++i) g[i] = value(i, step + 2) * static_cast<float>(scale);
    if (step == 2) g[layout.segments[0].offset + 17] = std::numeric_limits<float>::infinity();
    backend.copy_from_host(grads.data(), g.data(), g.size() * sizeof(float));  // backward's work

    const loom::TransferCounts before = counter->transfer_counts();
    const loom::PrecisionDecision decision = update->decide();
    const double lr = 0.01 / static_cast<double>(step + 1);
    if (decision.apply) update->update({lr, decision.grad_scale});
    const loom::TransferCounts after = counter->transfer_counts();
    EXPECT_EQ(after.device_to_host_copies - before.device_to_host_copies, 1u) << "step " << step;
    EXPECT_EQ(after.host_to_device_copies - before.host_to_device_copies, 0u) << "step " << step;
    EXPECT_EQ(after.synchronizations - before.synchronizations, 0u) << "step " << step;

    const loom::PrecisionDecision expected =
        host_precision.get()->after_backward(host_precision.get()->any_nonfinite(g.data(), g.size()));
    EXPECT_EQ(decision.apply, expected.apply) << "step " << step;
    EXPECT_EQ(decision.grad_scale, expected.grad_scale) << "step " << step;
    EXPECT_EQ(decision.apply, step != 2) << "step " << step;
    if (expected.apply) {
      host_norm = host_optimizer.get()->step(weights.data(), g.data(), {lr, expected.grad_scale}).grad_norm;
      ++applied;
    }
  }
  EXPECT_EQ(refreshes, applied);
  EXPECT_FALSE(update->passes_write_working_copy()) << "no working copy was given";
  EXPECT_EQ(c.optimizer.get()->successful_steps(), static_cast<uint64_t>(applied));
  EXPECT_EQ(update->last_grad_norm(), host_norm);
  std::vector<float> on_backend(layout.total);
  backend.copy_to_host(on_backend.data(), master.data(), on_backend.size() * sizeof(float));
  EXPECT_EQ(std::memcmp(on_backend.data(), weights.data(), weights.size() * sizeof(float)), 0)
      << "the backend path's weights differ from the host optimizer's";
}

/// The bytes of a backend tensor, copied to the host.
std::vector<unsigned char> bytes_of(loom::Backend& backend, const loom::Tensor& t) {
  std::vector<unsigned char> out(t.nbytes());
  backend.copy_to_host(out.data(), t.data, out.size());
  return out;
}

TEST(BackendUpdate, PassesWriteTheWorkingCopyWhereTheBackendOffersIt) {
  const PluginRegistry registry = test_registry();
  const Layout layout;
  const auto n = static_cast<int64_t>(layout.total);
  for (const char* backend_name : {"cpu-opaque", "cpu-opaque-no-working-copy"})
    for (const char* optimizer : {"nvlamb", "adamw", "sgd"})
      for (const loom::DType dtype : {loom::DType::bf16, loom::DType::f16}) {
        const std::string what = std::string(backend_name) + ", " + optimizer + ", " + loom::dtype_name(dtype);
        const bool offered = std::string(backend_name) == "cpu-opaque";
        RunComponents c;
        c.backend = create<loom::Backend>(registry, backend_name, "threads = 1\n");
        c.optimizer = create<loom::Optimizer>(registry, optimizer, "lr = 0.01\n");
        c.precision = create<loom::Precision>(registry, dtype == loom::DType::bf16 ? "bf16-mixed" : "fp16-mixed",
                                              "");
        loom::Backend& backend = *c.backend.get();
        std::vector<float> weights(layout.total);
        for (size_t i = 0; i < layout.total; ++i) weights[i] = value(i, 1);
        loom::Buffer master(backend, layout.total * sizeof(float)), grads(backend, layout.total * sizeof(float)),
            working(backend, layout.total * 2), cast(backend, layout.total * 2);
        backend.copy_from_host(master.data(), weights.data(), layout.total * sizeof(float));
        const loom::Tensor master_view = master.view(loom::DType::f32, {n});
        const loom::Tensor working_view = working.view(dtype, {n}), cast_view = cast.view(dtype, {n});
        backend.cast(master_view, working_view);  // as the model casts it at initialisation
        c.optimizer.get()->setup(layout.segments.data(), layout.segments.size(), layout.total);
        int refreshes = 0;
        const std::unique_ptr<BackendUpdate> update = BackendUpdate::attach_if_offered(
            c,
            {backend, master_view, grads.view(loom::DType::f32, {n}),
             [&] {
               ++refreshes;
               backend.cast(master_view, working_view);
             },
             working_view},
            1);
        ASSERT_NE(update, nullptr) << what;
        EXPECT_EQ(update->passes_write_working_copy(), offered) << what;
        int applied = 0;
        for (size_t step = 0; step < 4; ++step) {
          const double scale = c.precision.get()->loss_scale();
          std::vector<float> g(layout.total);
          for (size_t i = 0; i < layout.total; ++i) g[i] = value(i, step + 2) * static_cast<float>(scale);
          if (step == 1) g[layout.segments[2].offset + 3] = std::numeric_limits<float>::quiet_NaN();
          backend.copy_from_host(grads.data(), g.data(), g.size() * sizeof(float));
          const loom::PrecisionDecision decision = update->decide();
          EXPECT_EQ(decision.apply, step != 1) << what << ", step " << step;
          if (decision.apply) {
            update->update({0.01, decision.grad_scale});
            ++applied;
          }
          backend.cast(master_view, cast_view);
          EXPECT_EQ(bytes_of(backend, working_view), bytes_of(backend, cast_view))
              << what << ", step " << step << ": the working copy is not the cast of the master weights";
        }
        EXPECT_EQ(refreshes, offered ? 0 : applied) << what;
        EXPECT_EQ(c.optimizer.get()->successful_steps(), static_cast<uint64_t>(applied)) << what;
      }
}

TEST(BackendUpdate, IsDeclinedWhereTheHostPathIsNeeded) {
  const PluginRegistry registry = test_registry();
  const Layout layout;
  const auto n = static_cast<int64_t>(layout.total);
  for (const char* backend_name : {"cpu-opaque", "cpu"})
    for (int world : {1, 2})
      for (bool forced : {false, true}) {
        RunComponents c;
        c.backend = create<loom::Backend>(registry, backend_name, "threads = 1\n");
        c.optimizer = create<loom::Optimizer>(registry, "adamw", "");
        c.precision = create<loom::Precision>(registry, "bf16-mixed", "");
        c.optimizer.get()->setup(layout.segments.data(), layout.segments.size(), layout.total);
        loom::Backend& backend = *c.backend.get();
        loom::Buffer master(backend, layout.total * sizeof(float)),
            grads(backend, layout.total * sizeof(float));
        if (forced)
          setenv("LOOM_HOST_OPTIMIZER", "1", 1);
        else
          unsetenv("LOOM_HOST_OPTIMIZER");
        const auto update = BackendUpdate::attach_if_offered(
            c, {backend, master.view(loom::DType::f32, {n}), grads.view(loom::DType::f32, {n}), {}, {}}, world);
        unsetenv("LOOM_HOST_OPTIMIZER");
        // Several ranks all-reduce on host copies of device memory, so only backend/cpu keeps the path.
        const bool expected = !forced && (world == 1 || std::string(backend_name) == "cpu");
        EXPECT_EQ(update != nullptr, expected)
            << backend_name << ", " << world << " ranks, forced " << forced;
        // A declined path leaves the optimizer on the host.
        if (!expected) {
          EXPECT_NO_THROW(c.optimizer.get()->state_tensor(0));
        }
      }
}

}  // namespace
}  // namespace loom::host
