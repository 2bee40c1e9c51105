// The metrics stream's endpoint and token files; see metrics_stream_credentials.hpp.
#include "metrics/metrics_stream_credentials.hpp"

#include <sys/random.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <stdexcept>
#include <system_error>

#include <fmt/format.h>

#include "files/atomic_file.hpp"

namespace loom::host {
namespace fs = std::filesystem;

namespace {

constexpr size_t kTokenBytes = 32;

// The first line of a small file, or nullopt with `error` set (errno of the failing open).
std::optional<std::string> first_line(const fs::path& path, int& error) {
  errno = 0;
  std::ifstream in(path);
  if (!in) {
    error = errno != 0 ? errno : ENOENT;
    return std::nullopt;
  }
  std::string line;
  std::getline(in, line);
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return line;
}

}  // namespace

std::string random_stream_token() {
  unsigned char bytes[kTokenBytes];
  size_t filled = 0;
  while (filled < sizeof bytes) {
    const ssize_t got = ::getrandom(bytes + filled, sizeof bytes - filled, 0);
    if (got < 0) {
      if (errno == EINTR) continue;
      throw std::runtime_error(fmt::format("metrics stream: no random bytes for a token (getrandom: {})",
                                           std::strerror(errno)));
    }
    filled += static_cast<size_t>(got);
  }
  std::string token;
  token.reserve(2 * sizeof bytes);
  for (unsigned char b : bytes) token += fmt::format("{:02x}", b);
  return token;
}

void write_stream_credentials(const fs::path& run_directory, const std::string& endpoint,
                              const std::string& token) {
  // The token first: a client that sees the endpoint can already read the token that goes with it.
  write_file_atomically(run_directory / kStreamTokenFile, token + "\n",
                        fs::perms::owner_read | fs::perms::owner_write);
  write_file_atomically(run_directory / kStreamEndpointFile, endpoint + "\n");
}

void remove_stream_credentials(const fs::path& run_directory) {
  std::error_code ignored;
  fs::remove(run_directory / kStreamEndpointFile, ignored);
  fs::remove(run_directory / kStreamTokenFile, ignored);
}

FoundStreamCredentials read_stream_credentials(const fs::path& run_directory) {
  FoundStreamCredentials found;
  int error = 0;
  if (auto endpoint = first_line(run_directory / kStreamEndpointFile, error)) found.endpoint = *endpoint;
  const fs::path token_path = run_directory / kStreamTokenFile;
  if (auto token = first_line(token_path, error); token && !token->empty()) {
    found.token = *token;
  } else if (token) {
    found.token_problem = fmt::format("{} is empty", token_path.string());
  } else if (error == EACCES || error == EPERM) {
    found.token_problem = fmt::format(
        "cannot read {}: only the run's owner can; ask the owner for the token and give it with --token or "
        "LOOM_METRICS_TOKEN",
        token_path.string());
  } else {
    found.token_problem = fmt::format("cannot read {}: {}", token_path.string(), std::strerror(error));
  }
  return found;
}

fs::path find_run_directory_listening_on(const StreamAddress& address, const fs::path& runs_root) {
  std::error_code error;
  fs::directory_iterator entries(runs_root, error);
  if (error) return {};
  fs::path best;
  fs::file_time_type best_time;
  int looked = 0;
  for (const fs::directory_entry& entry : entries) {
    if (++looked > 10000) break;
    const fs::path endpoint_file = entry.path() / kStreamEndpointFile;
    int open_error = 0;
    const std::optional<std::string> endpoint = first_line(endpoint_file, open_error);
    if (!endpoint) continue;
    try {
      const StreamAddress listening = parse_stream_address(*endpoint);
      const bool same_host = listening.host == address.host ||
                             (is_loopback_host(listening.host) && is_loopback_host(address.host));
      if (!same_host || listening.port != address.port) continue;
    } catch (const std::invalid_argument&) {
      continue;  // not written by a run
    }
    const fs::file_time_type written = fs::last_write_time(endpoint_file, error);
    if (error) continue;
    if (best.empty() || written > best_time) best = entry.path(), best_time = written;
  }
  return best;
}

}  // namespace loom::host
