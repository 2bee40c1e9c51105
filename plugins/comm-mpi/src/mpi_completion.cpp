// Polling completion and peer probes; see mpi_completion.hpp.
#include "mpi_completion.hpp"

#include <sched.h>
#include <time.h>

#include <chrono>

#include "loom/sdk/error.hpp"

namespace loom_mpi {
namespace {

constexpr int kPingTag = 1;
constexpr int kPongTag = 2;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Spins briefly (a collective between busy ranks completes in microseconds), then sleeps so a
// rank waiting for a slow peer leaves the cores to the ranks still computing.
void pause_between_polls(unsigned iteration) {
  if (iteration < 64) {
    sched_yield();
    return;
  }
  const timespec nap{0, iteration < 1024 ? 20'000 : 200'000};
  nanosleep(&nap, nullptr);
}

}  // namespace

void check_mpi(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw loom::Error(std::string("communicator/mpi: ") + call + " failed: " + std::string(text, length));
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) out += (i > 0 ? ", " : "") + std::to_string(ranks[i]);
  return out;
}

PeerProbe::PeerProbe(MPI_Comm world) {
  check_mpi(MPI_Comm_dup(world, &comm_), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

PeerProbe::~PeerProbe() {
  // Freeing needs every peer alive; the owner decides whether MPI is finalised at all.
}

void PeerProbe::serve() {
  for (;;) {
    int arrived = 0;
    MPI_Status status;
    if (MPI_Iprobe(MPI_ANY_SOURCE, kPingTag, comm_, &arrived, &status) != MPI_SUCCESS || !arrived) return;
    int payload = 0;
    MPI_Recv(&payload, 1, MPI_INT, status.MPI_SOURCE, kPingTag, comm_, MPI_STATUS_IGNORE);
    MPI_Request reply;
    if (MPI_Isend(&answer_, 1, MPI_INT, status.MPI_SOURCE, kPongTag, comm_, &reply) == MPI_SUCCESS)
      MPI_Request_free(&reply);
  }
}

std::vector<int> PeerProbe::unresponsive(double grace_s) {
  std::vector<int> pongs(static_cast<size_t>(size_), 0);
  std::vector<MPI_Request> receives(static_cast<size_t>(size_), MPI_REQUEST_NULL);
  int ping = 0;
  for (int peer = 0; peer < size_; ++peer) {
    if (peer == rank_) continue;
    MPI_Irecv(&pongs[static_cast<size_t>(peer)], 1, MPI_INT, peer, kPongTag, comm_,
              &receives[static_cast<size_t>(peer)]);
    MPI_Request send;
    if (MPI_Isend(&ping, 1, MPI_INT, peer, kPingTag, comm_, &send) == MPI_SUCCESS) MPI_Request_free(&send);
  }
  const auto start = Clock::now();
  for (unsigned i = 0; seconds_since(start) < grace_s; ++i) {
    serve();
    int all = 0;
    MPI_Testall(size_, receives.data(), &all, MPI_STATUSES_IGNORE);
    if (all) break;
    pause_between_polls(i);
  }
  std::vector<int> silent;
  for (int peer = 0; peer < size_; ++peer) {
    MPI_Request& r = receives[static_cast<size_t>(peer)];
    if (r == MPI_REQUEST_NULL) continue;
    int done = 0;
    MPI_Test(&r, &done, MPI_STATUS_IGNORE);
    if (!done) silent.push_back(peer);
  }
  return silent;
}

bool poll_requests(std::vector<MPI_Request>& requests, double timeout_s, PeerProbe& probe) {
  const auto start = Clock::now();
  for (unsigned i = 0;; ++i) {
    int done = 0;
    check_mpi(MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE),
              "MPI_Testall");
    if (done) return true;
    if ((i & 15) == 0) {
      probe.serve();
      if (seconds_since(start) > timeout_s) return false;
    }
    pause_between_polls(i);
  }
}

}  // namespace loom_mpi
