// The host finds a communicator's extras as a named interface (loom/sdk/extended_collectives.hpp)
// and uses them where they are offered — overlapped gradient buckets, gathered rank statistics,
// a parameter check naming the rank that differs — and drives a communicator that does not offer
// them through `Communicator` alone, whatever interface version it declares. The fixture
// communicators (host/tests/fixtures/collectives_plugin.cpp) mark the data each path touches.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "loom/sdk/extended_collectives.hpp"
#include "plugin_loading/plugin_test_support.hpp"
#include "train/data_parallel.hpp"
#include "train/gradient_sync.hpp"

namespace loom::host {
namespace {

using testing::fixture_dir;
using testing::hermetic;

Component<loom::Communicator> communicator(const PluginRegistry& registry, const std::string& name,
                                           const std::string& toml = "") {
  const ComponentEntry* entry = registry.find(LOOM_KIND_COMMUNICATOR, name);
  if (entry == nullptr) throw std::runtime_error("no communicator/" + name + " in the fixture");
  return registry.create<loom::Communicator>(*entry, testing::config(toml), false);
}

struct Synchronised {
  bool overlapping;
  std::vector<float> grads;
};

// Backward reports the gradients final from the back in four pieces, as the model's hook does.
Synchronised synchronise_gradients(const Component<loom::Communicator>& c) {
  std::vector<float> grads(100, 0.0f);
  GradientSync sync(c, grads.data(), grads.size(),
                    GradientSyncOptions{.overlap = true, .bucket_elements = 30});
  for (size_t first : {75u, 50u, 25u, 0u}) sync.grads_final_from(first);
  sync.finish();
  return {sync.overlapping(), grads};
}

class Offered : public ::testing::TestWithParam<const char*> {};
class NotOffered : public ::testing::TestWithParam<const char*> {};

TEST_P(Offered, IsFoundAndAveragesEveryGradientOnceInOverlappedBuckets) {
  PluginRegistry registry(hermetic({fixture_dir("collectives")}));
  const auto c = communicator(registry, GetParam());
  ASSERT_NE(c.find<loom::ExtendedCollectives>(), nullptr);
  const Synchronised synchronised = synchronise_gradients(c);
  EXPECT_TRUE(synchronised.overlapping);
  // Each element in exactly one non-blocking all-reduce; the blocking mean never ran.
  EXPECT_EQ(synchronised.grads, std::vector<float>(100, 1.0f));
}

TEST_P(Offered, GathersEveryRanksStatisticsAndNamesTheRankWhoseParametersDiffer) {
  PluginRegistry registry(hermetic({fixture_dir("collectives")}));
  const auto c = communicator(registry, GetParam());
  const nlohmann::json ranks = per_rank_throughput(RankGroup{c, 0, 2}, 12.5, 80.0);
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_EQ(ranks[1]["rank"], 1);
  EXPECT_EQ(ranks[1]["step_ms"], 12.5);
  float weights[3] = {1.0f, 2.0f, 3.0f};
  EXPECT_NO_THROW(broadcast_parameters(RankGroup{c, 0, 2}, weights, 3));
  const auto corrupting = communicator(registry, GetParam(), "differ = true\n");
  try {
    broadcast_parameters(RankGroup{corrupting, 0, 2}, weights, 3);
    FAIL() << "a differing rank went unnoticed";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("the parameters of rank(s) 1 differ"), std::string::npos)
        << e.what();
  }
}

TEST_P(NotOffered, IsUsedThroughCommunicatorAlone) {
  PluginRegistry registry(hermetic({fixture_dir("collectives")}));
  const auto c = communicator(registry, GetParam(), "differ = true\n");
  EXPECT_EQ(c.find<loom::ExtendedCollectives>(), nullptr);
  const Synchronised synchronised = synchronise_gradients(c);
  EXPECT_FALSE(synchronised.overlapping);
  EXPECT_EQ(synchronised.grads, std::vector<float>(100, 1000.0f));  // one blocking mean after backward
  const nlohmann::json ranks = per_rank_throughput(RankGroup{c, 0, 2}, 12.5, 80.0);
  ASSERT_EQ(ranks.size(), 1u);  // only this rank's entry: nothing to gather with
  EXPECT_EQ(ranks[0]["rank"], 0);
  float weights[3] = {1.0f, 2.0f, 3.0f};
  // The checksum comparison goes through broadcast and a sum; all_gather, which would see the
  // differing rank, is never called.
  EXPECT_NO_THROW(broadcast_parameters(RankGroup{c, 0, 2}, weights, 3));
}

INSTANTIATE_TEST_SUITE_P(ExtendedCollectives, Offered, ::testing::Values("extended", "version2-extended"),
                         [](const auto& info) {
                           return std::string(info.param) == "extended" ? "Version1" : "Version2";
                         });
INSTANTIATE_TEST_SUITE_P(ExtendedCollectives, NotOffered, ::testing::Values("plain", "version2"),
                         [](const auto& info) {
                           return std::string(info.param) == "plain" ? "Version1" : "Version2";
                         });

}  // namespace
}  // namespace loom::host
