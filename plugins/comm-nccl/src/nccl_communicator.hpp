// communicator/nccl: collectives on device buffers through NCCL, one rank per GPU.
//
// Bootstrapped through MPI (communicator/mpi's class, which it extends): rank 0 creates the NCCL
// unique id and broadcasts it over MPI, every rank selects its GPU by backend/cuda's rule (the
// launcher's local rank modulo the GPU count, ../../backend-cuda/src/device_placement.hpp) and
// joins the NCCL communicator. Each device collective checks that its buffer is on that GPU. Device methods
// enqueue on the caller's (the GPU backend's) stream and return at once; host-memory collectives are MPI's
// (with its timeout).
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include "../../comm-mpi/src/mpi_communicator.hpp"

namespace loom_nccl {

class NcclCommunicator final : public loom_mpi::MpiCommunicator {
 public:
  explicit NcclCommunicator(loom::ComponentContext& context);
  ~NcclCommunicator() override;

  bool device_buffers() const override { return comm_ != nullptr; }
  void device_all_reduce(void* data, size_t count, loom::DType dtype, loom::ReduceOp op,
                         void* stream) override;
  void device_broadcast(void* data, size_t bytes, int root, void* stream) override;
  void device_all_gather(const void* send, size_t bytes, void* receive, void* stream) override;

 private:
  /// Throws unless the communicator is usable and `data` is device memory of this rank's GPU.
  void require_device(const char* what, const void* data) const;
  ncclComm_t comm_ = nullptr;
  int device_ = -1;
};

}  // namespace loom_nccl
