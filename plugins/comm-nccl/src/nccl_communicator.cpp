// NcclCommunicator; see nccl_communicator.hpp.
#include "nccl_communicator.hpp"

#include <string>

#include "loom/sdk/error.hpp"

namespace loom_nccl {
namespace {

void check_cuda(cudaError_t code, const char* call) {
  if (code != cudaSuccess)
    throw loom::Error(std::string("communicator/nccl: ") + call + ": " + cudaGetErrorString(code));
}

void check_nccl(ncclResult_t code, const char* call) {
  if (code != ncclSuccess)
    throw loom::Error(std::string("communicator/nccl: ") + call + ": " + ncclGetErrorString(code));
}

ncclDataType_t nccl_type(loom::DType dtype) {
  switch (dtype) {
    case loom::DType::f32:
      return ncclFloat32;
    case loom::DType::bf16:
      return ncclBfloat16;
    case loom::DType::f16:
      return ncclFloat16;
    default:
      throw loom::UnsupportedError("communicator/nccl: all-reduce supports f32, bf16 and f16 buffers");
  }
}

}  // namespace

NcclCommunicator::NcclCommunicator(loom::ComponentContext& context) : loom_mpi::MpiCommunicator(context) {
  if (context.dry_run()) return;
  int devices = 0;
  const cudaError_t found = cudaGetDeviceCount(&devices);
  if (found != cudaSuccess || devices == 0)
    throw loom::UnsupportedError(std::string("communicator/nccl needs a CUDA GPU on every rank; rank ") +
                                 std::to_string(rank()) + " found none (" +
                                 (found != cudaSuccess ? cudaGetErrorString(found) : "0 devices") +
                                 "): use communicator/mpi on CPU nodes");
  device_ = local_rank() % devices;
  check_cuda(cudaSetDevice(device_), "cudaSetDevice");
  ncclUniqueId id{};
  if (rank() == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  broadcast(&id, sizeof(id), 0);
  check_nccl(ncclCommInitRank(&comm_, size(), id, rank()), "ncclCommInitRank");
  context.log(loom::LogLevel::info, "rank " + std::to_string(rank()) + " on GPU " + std::to_string(device_));
}

NcclCommunicator::~NcclCommunicator() {
  if (comm_ == nullptr) return;
  // After an exception peers may never join a collective again: abort instead of a clean destroy.
  if (std::uncaught_exceptions() > 0)
    ncclCommAbort(comm_);
  else
    ncclCommDestroy(comm_);
}

void NcclCommunicator::require_device(const char* what) const {
  require_usable(what);
  if (comm_ == nullptr)
    throw loom::Error(std::string("communicator/nccl: ") + what + " without a NCCL communicator");
}

void NcclCommunicator::device_all_reduce(void* data, size_t count, loom::DType dtype, loom::ReduceOp op,
                                         void* stream) {
  require_device("device all-reduce");
  check_nccl(
      ncclAllReduce(data, data, count, nccl_type(dtype), op == loom::ReduceOp::mean ? ncclAvg : ncclSum,
                    comm_, static_cast<cudaStream_t>(stream)),
      "ncclAllReduce");
}

void NcclCommunicator::device_broadcast(void* data, size_t bytes, int root, void* stream) {
  require_device("device broadcast");
  check_nccl(ncclBroadcast(data, data, bytes, ncclUint8, root, comm_, static_cast<cudaStream_t>(stream)),
             "ncclBroadcast");
}

void NcclCommunicator::device_all_gather(const void* send, size_t bytes, void* receive, void* stream) {
  require_device("device all-gather");
  check_nccl(ncclAllGather(send, receive, bytes, ncclUint8, comm_, static_cast<cudaStream_t>(stream)),
             "ncclAllGather");
}

}  // namespace loom_nccl
