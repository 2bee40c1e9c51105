// Which GPU this process uses: the one rule shared by backend/cuda and communicator/nccl.
//
// Under a launcher (mpirun, srun, torchrun) every process of a node must take a different GPU,
// and a rank's backend and its NCCL communicator must take the same one: NCCL binds its
// communicator to the device current at construction and enqueues on the backend's stream. Both
// plugins therefore call choose_device() with the local rank read by launcher_local_rank(); an
// explicit [backend] device (≥ 0) wins over the local rank (communicator/nccl has no such option and
// checks, at each collective, that the buffers live on its device).
//
// Header-only and free of CUDA calls, so it is unit-tested without a GPU
// (plugins/backend-cuda/tests/device_placement_test.cpp).
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

#include "loom/sdk/error.hpp"

namespace loom_cuda {

/// [backend] device value meaning "this process's local rank modulo the device count" (the default).
inline constexpr int kDeviceFromLocalRank = -1;

/// The variables a launcher sets to this process's rank on its node, in the order they are
/// trusted: Open MPI's mpirun, Slurm's srun, MPICH/Intel MPI's Hydra, torchrun (and most other
/// Python launchers). Open MPI first: under an sbatch allocation Slurm's variables describe the
/// batch step, while mpirun's describe the process.
inline constexpr const char* kLocalRankVariables[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID",
                                                      "MPI_LOCALRANKID", "LOCAL_RANK"};

struct LocalRank {
  int rank = 0;
  const char* variable = "";  ///< the environment variable it was read from
};

/// This process's local rank from the first of kLocalRankVariables that is set and non-empty, or
/// nothing when none is (not launched as a job). `lookup(name)` returns the variable's value or
/// nullptr (std::getenv in production). A set variable that is not an integer in [0, 1000000]
/// throws loom::ConfigError naming it: guessing would put two processes on one GPU.
template <class Lookup>
std::optional<LocalRank> launcher_local_rank(Lookup&& lookup) {
  for (const char* name : kLocalRankVariables) {
    const char* text = lookup(name);
    if (text == nullptr || *text == '\0') continue;
    char* end = nullptr;
    const long value = std::strtol(text, &end, 10);
    if (*end != '\0' || value < 0 || value > 1'000'000)
      throw loom::ConfigError(
          std::string("the launcher's ") + name + " = \"" + text +
          "\" is not a local rank (a non-negative integer): unset it or fix the launch command");
    return LocalRank{static_cast<int>(value), name};
  }
  return std::nullopt;
}

/// launcher_local_rank() of this process's environment.
inline std::optional<LocalRank> launcher_local_rank() {
  return launcher_local_rank([](const char* name) -> const char* { return std::getenv(name); });
}

struct DeviceChoice {
  int index = 0;
  std::string why;  ///< for the log: "device = 2 in the recipe", "local rank 5 (SLURM_LOCALID) modulo 4 GPUs"
};

/// The device for this process among `device_count` (≥ 1) visible ones: `requested` when it is
/// ≥ 0 (throws loom::UnsupportedError when it is not visible), else the local rank modulo the
/// count, else 0 when no launcher says a local rank.
inline DeviceChoice choose_device(int requested, const std::optional<LocalRank>& local, int device_count) {
  const std::string visible = std::to_string(device_count) + (device_count == 1 ? " GPU" : " GPUs");
  if (requested >= 0) {
    if (requested >= device_count)
      throw loom::UnsupportedError("backend/cuda: device " + std::to_string(requested) +
                                   " requested but only " + visible +
                                   " visible (CUDA_VISIBLE_DEVICES narrows the list; device = -1 follows the "
                                   "launcher's local rank)");
    return {requested, "device = " + std::to_string(requested) + " in the recipe"};
  }
  if (!local) return {0, "no launcher local rank in the environment, so the first of " + visible};
  return {local->rank % device_count,
          "local rank " + std::to_string(local->rank) + " (" + local->variable + ") modulo " + visible};
}

}  // namespace loom_cuda
