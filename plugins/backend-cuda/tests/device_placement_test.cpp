// Which GPU a process takes (device_placement.hpp), no GPU needed: the launcher's local rank
// modulo the device count, an explicit device winning, bad variables refused. backend/cuda and
// communicator/nccl both call these two functions; the communicator's own test
// (plugins/comm-nccl/tests) checks on a GPU that it lands where choose_device() says.
#include "device_placement.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace loom_cuda_test {
namespace {

using loom_cuda::choose_device;
using loom_cuda::kDeviceFromLocalRank;
using loom_cuda::launcher_local_rank;
using loom_cuda::LocalRank;

/// launcher_local_rank() over a fixed environment.
std::optional<LocalRank> local_rank_in(const std::map<std::string, std::string>& environment) {
  return launcher_local_rank([&](const char* name) -> const char* {
    const auto found = environment.find(name);
    return found == environment.end() ? nullptr : found->second.c_str();
  });
}

TEST(LauncherLocalRank, ReadsEachLauncherInOrder) {
  EXPECT_FALSE(local_rank_in({}).has_value());
  EXPECT_FALSE(local_rank_in({{"OMPI_COMM_WORLD_RANK", "3"}, {"RANK", "3"}}).has_value())
      << "global ranks are not local";
  EXPECT_EQ(local_rank_in({{"OMPI_COMM_WORLD_LOCAL_RANK", "2"}})->rank, 2);
  EXPECT_EQ(local_rank_in({{"SLURM_LOCALID", "5"}})->rank, 5);
  EXPECT_EQ(local_rank_in({{"MPI_LOCALRANKID", "1"}})->rank, 1);
  const auto torchrun = local_rank_in({{"LOCAL_RANK", "7"}});
  ASSERT_TRUE(torchrun.has_value());
  EXPECT_EQ(torchrun->rank, 7);
  EXPECT_STREQ(torchrun->variable, "LOCAL_RANK");
  // mpirun inside an sbatch allocation: Slurm's variables describe the batch step, Open MPI's the process.
  const auto both =
      local_rank_in({{"SLURM_LOCALID", "0"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "3"}, {"LOCAL_RANK", "1"}});
  EXPECT_EQ(both->rank, 3);
  EXPECT_STREQ(both->variable, "OMPI_COMM_WORLD_LOCAL_RANK");
  // An empty variable counts as unset.
  EXPECT_EQ(local_rank_in({{"OMPI_COMM_WORLD_LOCAL_RANK", ""}, {"SLURM_LOCALID", "4"}})->rank, 4);
}

TEST(LauncherLocalRank, RefusesAValueThatIsNotALocalRank) {
  for (const char* bad : {"x", "-1", "2a", "1.5", "99999999999"}) {
    try {
      (void)local_rank_in({{"SLURM_LOCALID", bad}});
      ADD_FAILURE() << "accepted SLURM_LOCALID=" << bad;
    } catch (const loom::Error& e) {
      EXPECT_EQ(e.status(), LOOM_E_INVALID_CONFIG);
      EXPECT_NE(std::string(e.what()).find(std::string("SLURM_LOCALID = \"") + bad + "\""), std::string::npos)
          << e.what();
    }
  }
}

TEST(ChooseDevice, LocalRankModuloTheDeviceCount) {
  const LocalRank rank5{5, "SLURM_LOCALID"};
  EXPECT_EQ(choose_device(kDeviceFromLocalRank, rank5, 8).index, 5);
  EXPECT_EQ(choose_device(kDeviceFromLocalRank, rank5, 4).index, 1);
  EXPECT_EQ(choose_device(kDeviceFromLocalRank, rank5, 1).index, 0);
  EXPECT_EQ(choose_device(kDeviceFromLocalRank, rank5, 4).why, "local rank 5 (SLURM_LOCALID) modulo 4 GPUs");
  // Eight ranks on a node of eight GPUs: all different.
  std::map<int, int> taken;
  for (int rank = 0; rank < 8; ++rank)
    ++taken[choose_device(kDeviceFromLocalRank, LocalRank{rank, "LOCAL_RANK"}, 8).index];
  EXPECT_EQ(taken.size(), 8u);
  // Not launched as a job: the first GPU.
  const auto alone = choose_device(kDeviceFromLocalRank, std::nullopt, 4);
  EXPECT_EQ(alone.index, 0);
  EXPECT_NE(alone.why.find("no launcher local rank"), std::string::npos) << alone.why;
}

TEST(ChooseDevice, AnExplicitDeviceWins) {
  const auto chosen = choose_device(2, LocalRank{1, "OMPI_COMM_WORLD_LOCAL_RANK"}, 4);
  EXPECT_EQ(chosen.index, 2);
  EXPECT_EQ(chosen.why, "device = 2 in the recipe");
  EXPECT_EQ(choose_device(0, LocalRank{3, "LOCAL_RANK"}, 4).index, 0);
  try {
    (void)choose_device(4, std::nullopt, 4);
    FAIL() << "device 4 of 4 accepted";
  } catch (const loom::Error& e) {
    EXPECT_EQ(e.status(), LOOM_E_UNSUPPORTED);
    EXPECT_NE(std::string(e.what()).find("device 4 requested but only 4 GPUs visible"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace loom_cuda_test
