// The comm-local plugin: communicator/local, the communicator of a run in one process, whatever
// the hardware (the default when a recipe has no [communicator]).
#include "loom/sdk/plugin.hpp"

#include "local_communicator.hpp"

LOOM_PLUGIN("comm-local", "0.1.0", "Single-process communicator (the default)",
            loom::component<loom::Communicator, loom_local::LocalCommunicator>("local", "0.1.0",
                                                                               "single process: rank 0 of 1"))
