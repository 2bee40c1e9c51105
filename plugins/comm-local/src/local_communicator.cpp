// communicator/local: the single-process communicator (rank 0 of 1). Collectives over one rank
// leave data unchanged; every run without MPI or NCCL uses this.
#include "loom/sdk/communicator.hpp"
#include "loom/sdk/plugin.hpp"

#include "local_communicator.hpp"

namespace loom_local {

LocalCommunicator::LocalCommunicator(loom::ComponentContext& /*context*/) {}

int LocalCommunicator::rank() const {
  return 0;
}
int LocalCommunicator::size() const {
  return 1;
}
void LocalCommunicator::all_reduce_sum(float* /*data*/, size_t /*count*/) {}
void LocalCommunicator::all_reduce_mean(float* /*data*/, size_t /*count*/) {}
void LocalCommunicator::broadcast(void* /*data*/, size_t /*bytes*/, int root) {
  if (root != 0)
    throw loom::Error("communicator/local: broadcast root must be 0 (one rank), got " + std::to_string(root));
}
void LocalCommunicator::barrier() {}

}  // namespace loom_local
