// communicator/mpi through the host, in real processes: run under mpirun (tests/e2e/mpirun.sh).
// One communicator per process (MPI initialises once), shared by the tests.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "loom/sdk/communicator.hpp"
#include "loom/sdk/extended_collectives.hpp"
#include "loom/sdk/float16.hpp"
#include "plugin_loading/plugin_registry.hpp"
#include "recipe/errors.hpp"

namespace {

using loom::host::Component;

Component<loom::Communicator>& communicator() {
  static Component<loom::Communicator> comm = [] {
    loom::host::PluginSearchOptions search;
    search.directories = {LOOM_PLUGIN_DIR};
    search.default_paths = false;
    search.environment = false;
    loom::host::PluginRegistry registry(search);
    const auto* entry = registry.find(LOOM_KIND_COMMUNICATOR, "mpi");
    if (entry == nullptr) throw std::runtime_error("communicator/mpi not found in " LOOM_PLUGIN_DIR);
    const char* timeout = std::getenv("LOOM_TEST_TIMEOUT_S");
    const std::string toml = std::string("timeout_s = ") + (timeout != nullptr ? timeout : "30.0") + "\n";
    return registry.create<loom::Communicator>(*entry, {"communicator", toml, "", "test:1:1"}, false);
  }();
  return comm;
}

loom::Communicator& comm() {
  return *communicator().get();
}

/// Its extra collectives, found as the host finds them: the named interface it offers.
loom::ExtendedCollectives& collectives() {
  auto* found = communicator().find<loom::ExtendedCollectives>();
  if (found == nullptr) throw std::runtime_error("communicator/mpi does not offer ExtendedCollectives");
  return *found;
}

TEST(MpiCommunicator, RanksAreDistinctAndCoverTheJob) {
  const int rank = comm().rank(), size = comm().size();
  ASSERT_GE(size, 2) << "run under mpirun -np 2 or more";
  std::vector<int> ranks(static_cast<size_t>(size), -1);
  collectives().all_gather(&rank, sizeof(int), ranks.data());
  for (int r = 0; r < size; ++r) EXPECT_EQ(ranks[static_cast<size_t>(r)], r);
  EXPECT_GE(collectives().local_rank(), 0);
  EXPECT_LT(collectives().local_rank(), size);
  EXPECT_FALSE(collectives().device_buffers());
}

TEST(MpiCommunicator, AllReduceSumAndMeanOverF32) {
  const int rank = comm().rank(), size = comm().size();
  std::vector<float> data(1000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<float>(rank + 1) * static_cast<float>(i);
  std::vector<float> mean = data;
  comm().all_reduce_sum(data.data(), data.size());
  comm().all_reduce_mean(mean.data(), mean.size());
  const float ranks_sum = static_cast<float>(size * (size + 1) / 2);
  for (size_t i = 0; i < data.size(); ++i) {
    EXPECT_EQ(data[i], ranks_sum * static_cast<float>(i));
    EXPECT_NEAR(mean[i], ranks_sum * static_cast<float>(i) / static_cast<float>(size), 1e-3);
  }
}

TEST(MpiCommunicator, AllReduceOverBf16) {
  const int rank = comm().rank(), size = comm().size();
  std::vector<uint16_t> data(64, loom::f32_to_bf16_bits(static_cast<float>(rank + 1)));
  collectives().all_reduce(data.data(), data.size(), loom::DType::bf16, loom::ReduceOp::sum);
  for (uint16_t v : data) EXPECT_EQ(loom::bf16_bits_to_f32(v), static_cast<float>(size * (size + 1) / 2));
  std::vector<uint16_t> mean(8, loom::f32_to_bf16_bits(2.0f * static_cast<float>(rank)));
  collectives().all_reduce(mean.data(), mean.size(), loom::DType::bf16, loom::ReduceOp::mean);
  for (uint16_t v : mean) EXPECT_EQ(loom::bf16_bits_to_f32(v), static_cast<float>(size - 1));
}

TEST(MpiCommunicator, NonBlockingAllReduceOverlapsOtherWork) {
  const int size = comm().size();
  std::vector<std::vector<float>> buckets(4, std::vector<float>(100000, 1.0f));
  std::vector<loom::CollectiveHandle> handles;
  for (auto& bucket : buckets)
    handles.push_back(
        collectives().start_all_reduce(bucket.data(), bucket.size(), loom::DType::f32, loom::ReduceOp::sum));
  EXPECT_NE(handles[0], handles[1]);
  int polls = 0;
  while (!collectives().test(handles[0])) ++polls;  // work between polls would overlap here
  for (size_t i = 1; i < handles.size(); ++i) collectives().wait(handles[i]);
  for (const auto& bucket : buckets) {
    EXPECT_EQ(bucket.front(), static_cast<float>(size));
    EXPECT_EQ(bucket.back(), static_cast<float>(size));
  }
  EXPECT_THROW(collectives().wait(handles[0]), loom::Error);  // released once complete
}

TEST(MpiCommunicator, BroadcastFromEveryRootAndBarrier) {
  const int rank = comm().rank(), size = comm().size();
  for (int root = 0; root < size; ++root) {
    std::vector<double> values(33, static_cast<double>(rank));
    comm().broadcast(values.data(), values.size() * sizeof(double), root);
    for (double v : values) EXPECT_EQ(v, static_cast<double>(root));
  }
  comm().barrier();
  double dummy = 0;
  EXPECT_THROW(comm().broadcast(&dummy, sizeof(dummy), size), loom::Error);
}

// Rank 1 stops taking part; rank 0's all-reduce must fail within the timeout naming rank 1.
TEST(MpiCommunicatorTimeout, AStalledPeerBecomesAnErrorNamingIt) {
  float x = 1;
  if (comm().rank() == 1) {
    sleep(8);
    return;
  }
  if (comm().rank() != 0) return;
  const auto start = std::chrono::steady_clock::now();
  try {
    comm().all_reduce_sum(&x, 1);
    FAIL() << "the all-reduce completed without rank 1";
  } catch (const loom::Error& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("rank 1 did not respond"), std::string::npos) << message;
    std::cout << "error as reported: " << message << "\n";
  }
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(waited, 6.0);
  EXPECT_THROW(comm().barrier(), loom::Error);  // broken from now on
}

}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  communicator();  // MPI_Init before any test runs
  const int rank = comm().rank();
  if (rank != 0) ::testing::GTEST_FLAG(brief) = true;
  return RUN_ALL_TESTS();
}
