// The core plugin: components every run needs whatever the hardware.
#include "loom/sdk/plugin.hpp"

#include "local_communicator.hpp"

LOOM_PLUGIN("core", "0.1.0", "Components every run needs",
            loom::component<loom::Communicator, loom_core::LocalCommunicator>("local", "0.1.0",
                                                                              "single process: rank 0 of 1"))
