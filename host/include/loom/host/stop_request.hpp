// StopRequest: Ctrl-C / SIGTERM ask a run to finish its current step, checkpoint and exit 0.
//
// The handler only sets a flag (async-signal-safe); the trainer polls `requested()` between
// steps. A second signal while a stop is pending restores the default action and re-raises it,
// so a user can still kill a run that does not stop.
#pragma once

namespace loom::host {

/// Installs handlers for SIGINT and SIGTERM (idempotent).
void install_stop_handlers();
/// True once SIGINT or SIGTERM arrived (or `request_stop` was called).
bool stop_requested();
/// Requests a stop from code (tests, the control channel).
void request_stop();
/// Clears the flag (tests).
void clear_stop_request();

}  // namespace loom::host
