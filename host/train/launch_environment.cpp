// LaunchEnvironment; see launch_environment.hpp.
#include "train/launch_environment.hpp"

#include <cstdlib>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

namespace loom::host {
namespace {

std::optional<int> integer_variable(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return std::nullopt;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (*end != '\0' || value < 0 || value > 1'000'000) return std::nullopt;
  return static_cast<int>(value);
}

std::optional<LaunchEnvironment> read(const char* launcher, const char* rank, const char* size,
                                      const char* local) {
  const auto r = integer_variable(rank), s = integer_variable(size);
  if (!r || !s || *s < 1 || *r >= *s) return std::nullopt;
  return LaunchEnvironment{*r, *s, integer_variable(local).value_or(0), launcher};
}

}  // namespace

LaunchEnvironment detect_launch_environment() {
  if (auto e = read("Open MPI", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK"))
    return *e;
  // SLURM_STEP_NUM_TASKS, not SLURM_NTASKS: only a step started by srun has it, not the batch script.
  if (auto e = read("SLURM", "SLURM_PROCID", "SLURM_STEP_NUM_TASKS", "SLURM_LOCALID")) return *e;
  if (auto e = read("PMI", "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID")) return *e;
  return {};
}

void check_launch_matches(const LaunchEnvironment& launch, const std::string& communicator, int rank,
                          int world) {
  if (launch.size <= 1 || (launch.size == world && launch.rank == rank)) return;
  if (world == 1)
    throw std::runtime_error(fmt::format(
        "{} started this process as rank {} of {}, but the recipe's communicator ({}) runs one process: "
        "set [communicator] component = \"mpi\" (or --set communicator.component=mpi), or launch one process",
        launch.launcher, launch.rank, launch.size, communicator));
  throw std::runtime_error(
      fmt::format("{} says rank {} of {}, but {} says rank {} of {}: the launcher and the "
                  "communicator disagree (is the MPI the job was launched with the one Loom was built with?)",
                  launch.launcher, launch.rank, launch.size, communicator, rank, world));
}

}  // namespace loom::host
