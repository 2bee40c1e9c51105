// Rank detection from the launcher's environment, and the refusal of a one-process communicator
// in a job of several processes.
#include "train/launch_environment.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace loom::host {
namespace {

// Sets variables for one test and removes every launcher variable afterwards.
class LaunchEnvironmentTest : public ::testing::Test {
 protected:
  void TearDown() override {
    for (const char* name :
         {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_PROCID",
          "SLURM_STEP_NUM_TASKS", "SLURM_NTASKS", "SLURM_LOCALID", "PMI_RANK", "PMI_SIZE"})
      unsetenv(name);
  }
};

TEST_F(LaunchEnvironmentTest, NoLauncherIsOneProcess) {
  TearDown();
  const LaunchEnvironment e = detect_launch_environment();
  EXPECT_EQ(e.size, 1);
  EXPECT_EQ(e.launcher, "");
  EXPECT_NO_THROW(check_launch_matches(e, "communicator/local", 0, 1));
}

TEST_F(LaunchEnvironmentTest, OpenMpiVariablesWinOverSlurm) {
  setenv("SLURM_PROCID", "5", 1);
  setenv("SLURM_STEP_NUM_TASKS", "8", 1);
  setenv("OMPI_COMM_WORLD_RANK", "1", 1);
  setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
  setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
  const LaunchEnvironment e = detect_launch_environment();
  EXPECT_EQ(e.launcher, "Open MPI");
  EXPECT_EQ(e.rank, 1);
  EXPECT_EQ(e.size, 4);
  EXPECT_EQ(e.local_rank, 1);
}

TEST_F(LaunchEnvironmentTest, SlurmStepVariablesNotTheBatchScriptsOnes) {
  setenv("SLURM_PROCID", "0", 1);
  setenv("SLURM_NTASKS", "8", 1);  // also set in the batch script itself: not a job step
  EXPECT_EQ(detect_launch_environment().size, 1);
  setenv("SLURM_STEP_NUM_TASKS", "8", 1);
  setenv("SLURM_PROCID", "3", 1);
  setenv("SLURM_LOCALID", "3", 1);
  const LaunchEnvironment e = detect_launch_environment();
  EXPECT_EQ(e.launcher, "SLURM");
  EXPECT_EQ(e.rank, 3);
  EXPECT_EQ(e.size, 8);
}

TEST_F(LaunchEnvironmentTest, ALocalCommunicatorInAJobOfSeveralIsRefusedSayingWhatToSet) {
  const LaunchEnvironment e{1, 2, 1, "Open MPI"};
  try {
    check_launch_matches(e, "communicator/local", 0, 1);
    FAIL() << "accepted";
  } catch (const std::runtime_error& error) {
    EXPECT_NE(std::string(error.what()).find("communicator.component=mpi"), std::string::npos)
        << error.what();
  }
  EXPECT_THROW(check_launch_matches(e, "communicator/mpi", 0, 3), std::runtime_error);
  EXPECT_NO_THROW(check_launch_matches(e, "communicator/mpi", 1, 2));
}

}  // namespace
}  // namespace loom::host
