// How a run's owner finds and enters its metrics stream: two files in the run directory.
//   metrics.endpoint  "127.0.0.1:PORT\n", the address the stream is bound to (mode 0644, like the
//                     rest of the run directory: an address is no secret)
//   metrics.token     the token every client must send first (mode 0600: only the run's owner, and
//                     root, can read it; written through an owner-only temporary file, so it is
//                     never readable by others, not even while it is written)
// MetricsServer writes both before it accepts a client and removes them when it stops; loom-dash
// reads them (`--attach RUN_DIR`, or `--attach HOST:PORT` finding the run under ./runs).
// docs/decisions/metrics-stream-auth.md says why.
#pragma once

#include <filesystem>
#include <string>

#include "recipe/stream_address.hpp"

namespace loom::host {

inline constexpr const char* kStreamEndpointFile = "metrics.endpoint";
inline constexpr const char* kStreamTokenFile = "metrics.token";

/// 32 bytes from the kernel's random source (getrandom(2), as /dev/urandom), as 64 hex digits.
/// Throws std::runtime_error when the kernel has none to give.
std::string random_stream_token();

/// Writes metrics.endpoint and metrics.token into `run_directory` (atomically each; the token
/// owner-only). Throws std::runtime_error naming the file that cannot be written.
void write_stream_credentials(const std::filesystem::path& run_directory, const std::string& endpoint,
                              const std::string& token);

/// Removes both files; missing ones are fine (never throws).
void remove_stream_credentials(const std::filesystem::path& run_directory);

/// What a client finds in a run directory. `endpoint` is empty when the run is not listening
/// (no metrics.endpoint); `token` is empty with `token_problem` saying why when it cannot be read
/// (another user's run: permission denied).
struct FoundStreamCredentials {
  std::string endpoint;
  std::string token;
  std::string token_problem;
};
FoundStreamCredentials read_stream_credentials(const std::filesystem::path& run_directory);

/// The run directory directly under `runs_root` whose metrics.endpoint names `address` (the same
/// port and the same host, or both loopback), the most recently written one when several do;
/// empty when none does. Looks at no more than 10,000 entries.
std::filesystem::path find_run_directory_listening_on(const StreamAddress& address,
                                                      const std::filesystem::path& runs_root);

}  // namespace loom::host
