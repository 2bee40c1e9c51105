// Frozen source of libloom-fixture-sdk-0.1.so, the committed binary built against Loom SDK 0.1.0
// (plugin ABI 0.1) by build-fixture.sh. The binary, not this file, is the fixture: it must keep
// loading and working in every later host (plugin_compatibility_test.cpp), so an accidental
// break of the plugin ABI fails CI. Never rebuild it with a newer SDK; add a new fixture instead.
#include <string>

#include "loom/sdk/communicator.hpp"
#include "loom/sdk/plugin.hpp"

namespace {

// communicator/sdk-0.1: `world` ranks that all hold the same data; sum multiplies by `world`,
// mean leaves data alone, broadcast is a no-op. Options are read through the SDK 0.1 Options.
class FrozenCommunicator final : public loom::Communicator {
 public:
  explicit FrozenCommunicator(loom::ComponentContext& context)
      : world_(context.options().get<int64_t>("world", 1, loom::Range{1, 64})),
        label_(context.options().choice("label", "plain", {"plain", "fancy"})) {
    context.log(loom::LogLevel::debug, "frozen SDK 0.1 fixture created (" + label_ + ")");
  }
  int rank() const override { return 0; }
  int size() const override { return static_cast<int>(world_); }
  void all_reduce_sum(float* data, size_t count) override {
    for (size_t i = 0; i < count; ++i) data[i] *= static_cast<float>(world_);
  }
  void all_reduce_mean(float*, size_t) override {}
  void broadcast(void*, size_t, int) override {}
  void barrier() override {
    if (label_ == "fancy") throw loom::Error("barrier of the SDK 0.1 fixture fails when label = \"fancy\"");
  }

 private:
  int64_t world_;
  std::string label_;
};

}  // namespace

LOOM_PLUGIN("fixture-sdk-0.1", "0.1.0", "committed binary built against Loom SDK 0.1.0",
            loom::component<loom::Communicator, FrozenCommunicator>("sdk-0.1", "0.1.0",
                                                                  "frozen SDK 0.1 communicator"))
