// The comm-nccl plugin: communicator/nccl (NCCL on GPUs, bootstrapped through Open MPI).
#include "loom/sdk/plugin.hpp"
#include "loom/sdk/extended_collectives.hpp"

#include "nccl_communicator.hpp"

LOOM_PLUGIN("comm-nccl", "0.2.0", "NCCL communicator for one rank per GPU (bootstrapped through Open MPI)",
            loom::component<loom::Communicator2, loom_nccl::NcclCommunicator>(
                "nccl", "0.2.0", "NCCL: stream-ordered device collectives; host collectives over MPI",
                loom::offers<loom::ExtendedCollectives>{}))
