// The comm-mpi plugin: communicator/mpi (Open MPI) for CPU clusters. It registers as interface
// version 2 (Communicator2) for hosts from before ExtendedCollectives, and offers that interface.
#include "loom/sdk/plugin.hpp"
#include "loom/sdk/extended_collectives.hpp"

#include "mpi_communicator.hpp"

LOOM_PLUGIN("comm-mpi", "0.2.0", "Open MPI communicator for runs under mpirun or srun",
            loom::component<loom::Communicator2, loom_mpi::MpiCommunicator>(
                "mpi", "0.2.0", "Open MPI: host-memory collectives, dead/stalled peers time out",
                loom::offers<loom::ExtendedCollectives>{}))
