// The comm-mpi plugin: communicator/mpi (Open MPI) for CPU clusters.
#include "loom/sdk/plugin.hpp"

#include "mpi_communicator.hpp"

LOOM_PLUGIN("comm-mpi", "0.1.0", "Open MPI communicator for runs under mpirun or srun",
            loom::component<loom::Communicator2, loom_mpi::MpiCommunicator>(
                "mpi", "0.1.0", "Open MPI: host-memory collectives, dead/stalled peers time out"))
