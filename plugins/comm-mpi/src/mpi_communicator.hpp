// communicator/mpi: the processes of an `mpirun`/`srun` job through Open MPI, offering the
// named interface ExtendedCollectives (extended_collectives.hpp). The class also derives from
// Communicator2 and registers as interface version 2, which is how hosts from before the named
// interface reach the same methods (communicator2.hpp); each override serves both bases.
//
// Every collective is started non-blocking and completed by polling (mpi_completion.hpp), so a
// dead or stalled peer turns into an error naming it after `timeout_s` instead of a hang. Host
// memory only: device buffers are communicator/nccl's (which reuses this class for its host
// collectives and its bootstrap).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "loom/sdk/communicator2.hpp"
#include "loom/sdk/extended_collectives.hpp"
#include "loom/sdk/plugin.hpp"

#include "mpi_completion.hpp"

namespace loom_mpi {

class MpiCommunicator : public loom::Communicator2, public loom::ExtendedCollectives {
 public:
  /// Reads `timeout_s`; initialises MPI unless `context.dry_run()` (or MPI is already up).
  explicit MpiCommunicator(loom::ComponentContext& context);
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  void all_reduce_sum(float* data, size_t count) override;
  void all_reduce_mean(float* data, size_t count) override;
  void broadcast(void* data, size_t bytes, int root) override;
  void barrier() override;
  void all_reduce(void* data, size_t count, loom::DType dtype, loom::ReduceOp op) override;
  loom::CollectiveHandle start_all_reduce(void* data, size_t count, loom::DType dtype,
                                          loom::ReduceOp op) override;
  bool test(loom::CollectiveHandle handle) override;
  void wait(loom::CollectiveHandle handle) override;
  void all_gather(const void* send, size_t bytes, void* receive) override;
  bool device_buffers() const override { return false; }
  void device_all_reduce(void* data, size_t count, loom::DType dtype, loom::ReduceOp op,
                         void* stream) override;
  void device_broadcast(void* data, size_t bytes, int root, void* stream) override;
  void device_all_gather(const void* send, size_t bytes, void* receive, void* stream) override;

 protected:
  /// The run's communicator (a duplicate of MPI_COMM_WORLD); null under `loom check`.
  MPI_Comm world() const { return world_; }
  /// Completes `requests` or throws naming the unresponsive ranks; `what` names the collective.
  void complete(std::vector<MPI_Request>& requests, const std::string& what);
  /// Throws when the communicator is unusable (dry run, or broken by an earlier failure).
  void require_usable(const char* what) const;

 private:
  struct Pending {
    std::vector<MPI_Request> requests;
    void* data;
    size_t count;
    loom::DType dtype;
    loom::ReduceOp op;
  };
  std::vector<MPI_Request> start_reduce_requests(void* data, size_t count, loom::DType dtype);
  void finish_reduce(const Pending& pending) const;

  double timeout_s_ = 300;
  bool initialised_here_ = false;
  bool dry_run_ = false;
  bool broken_ = false;
  int rank_ = 0, size_ = 1, local_rank_ = 0;
  MPI_Comm world_ = MPI_COMM_NULL;
  std::unique_ptr<PeerProbe> probe_;
  std::map<loom::CollectiveHandle, Pending> pending_;
  loom::CollectiveHandle next_handle_ = 1;
};

}  // namespace loom_mpi
