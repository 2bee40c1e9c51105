// Completing MPI requests without ever blocking forever, and finding out which peer is missing.
//
// MPI's own waits block until the collective completes, so one dead or stopped process hangs
// every other rank. Instead requests are polled (`poll_requests`) against a deadline. While
// polling, a rank answers liveness pings on a private communicator (`PeerProbe::serve`); when
// the deadline passes it pings every peer and names those that do not answer within a grace
// period: a rank that is still alive is polling too (it waits in the same collective) and
// answers, a killed or stopped one cannot.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

namespace loom_mpi {

class PeerProbe {
 public:
  /// Duplicates `world` so pings never match the run's own messages.
  explicit PeerProbe(MPI_Comm world);
  ~PeerProbe();
  PeerProbe(const PeerProbe&) = delete;
  PeerProbe& operator=(const PeerProbe&) = delete;

  /// Answers every ping that has arrived.
  void serve();
  /// Pings every other rank; returns those that did not answer within `grace_s` seconds.
  std::vector<int> unresponsive(double grace_s);

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  int answer_ = 0;  // payload of pongs (the buffer must outlive the send)
};

/// Polls until every request has completed (true) or `timeout_s` passed (false), answering pings
/// meanwhile. Completed requests become MPI_REQUEST_NULL. Throws loom::Error on an MPI error.
bool poll_requests(std::vector<MPI_Request>& requests, double timeout_s, PeerProbe& probe);

/// "rank 1" / "ranks 1, 3" for messages.
std::string rank_list(const std::vector<int>& ranks);

/// Throws loom::Error with MPI's text for `code` when it is not MPI_SUCCESS.
void check_mpi(int code, const char* call);

}  // namespace loom_mpi
