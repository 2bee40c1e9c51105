// The OpenMP wait policy the host asks for before any plugin loads: passive (threads sleep when
// they run out of work) unless the user set OMP_WAIT_POLICY or GOMP_SPINCOUNT.
//
// libgomp (backend/cpu's OpenMP runtime, and oneDNN's) reads these variables once, when a plugin
// that links it is first mapped, and by default spins at every join for about 300,000
// iterations. On a machine with other work that spinning burns the process's share of the CPU
// while the thread it waits for is not scheduled: a bert-base inference request at batch 1 × 128
// took 1.8-2.9 s instead of 0.6-1.0 s under a load of 9 on 2 cores (docs/decisions/
// openmp-wait-policy.md). PluginRegistry applies it before loading anything.
#pragma once

namespace loom::host {

/// Sets OMP_WAIT_POLICY=PASSIVE when neither OMP_WAIT_POLICY nor GOMP_SPINCOUNT is set; returns
/// whether it did. Takes effect only if no OpenMP runtime is loaded yet.
bool apply_openmp_wait_default();

}  // namespace loom::host
