// StopRequest: Ctrl-C / SIGTERM ask a run to finish its current step, checkpoint and exit 0.
//
// The trainer polls `stop_requested()` between steps. A second signal while a stop is pending
// takes the default action (the process dies of it), so a user can still kill a run that does
// not stop; before `install_stop_handlers()` a signal takes the default action at once.
//
// Where the signal is handled matters: a handler runs on whichever thread the kernel picks,
// interrupting it wherever it is — for a training process, usually inside oneDNN's JIT GEMM
// kernels. Runs signalled that way died of heap corruption a few times in a hundred ("corrupted
// size vs. prev_size" in free() under dnnl_sgemm, the step after the signal; 8 of 72 under load).
// So `loom` calls `route_stop_signals_to_a_thread()` first thing in main(): SIGINT and SIGTERM
// are blocked in every thread (threads inherit the mask) and one dedicated thread takes them
// with sigwait(), so no compute thread is ever interrupted. Processes that do not (the
// loom-dash window, tests) get a classic flag-setting handler from install_stop_handlers().
#pragma once

namespace loom::host {

/// Blocks SIGINT and SIGTERM in this thread and starts the thread that waits for them. Call
/// before any other thread exists (start of main); idempotent.
void route_stop_signals_to_a_thread();
/// Arms stop requests for SIGINT and SIGTERM (idempotent).
void install_stop_handlers();
/// True once SIGINT or SIGTERM arrived after install_stop_handlers (or `request_stop` was called).
bool stop_requested();
/// Requests a stop from code (tests, the control channel).
void request_stop();
/// Clears the flag (tests).
void clear_stop_request();

}  // namespace loom::host
