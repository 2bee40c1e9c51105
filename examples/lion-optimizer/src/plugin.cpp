// libloom-lion.so: one optimizer component, optimizer/lion.
#include "loom/sdk/plugin.hpp"

#include "lion.hpp"

LOOM_PLUGIN("lion", "0.1.0", "Lion optimizer (example plugin built against the installed Loom SDK)",
            loom::component<loom::Optimizer, loom_lion::Lion>("lion", "0.1.0",
                                                            "Lion: sign of an interpolated momentum, decoupled decay"))
