// LaunchEnvironment: what the launcher (mpirun, srun) says about this process, read from its
// environment variables before any communicator exists — so a recipe left on
// communicator/local under `mpirun -np 4` is refused instead of training four copies.
#pragma once

#include <string>

namespace loom::host {

struct LaunchEnvironment {
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  std::string launcher;  ///< "Open MPI", "SLURM", "PMI"; empty when not launched as a job
};

/// Open MPI (OMPI_COMM_WORLD_*), then SLURM (SLURM_PROCID/STEP_NUM_TASKS/LOCALID), then PMI
/// (PMI_RANK/PMI_SIZE); the first complete set wins.
LaunchEnvironment detect_launch_environment();

/// Throws std::runtime_error when the launcher started several processes but the communicator
/// sees a different world (e.g. communicator/local under mpirun), saying what to set.
void check_launch_matches(const LaunchEnvironment& launch, const std::string& communicator, int rank,
                          int world);

}  // namespace loom::host
