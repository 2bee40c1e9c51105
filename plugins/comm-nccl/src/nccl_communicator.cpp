// NcclCommunicator; see nccl_communicator.hpp.
#include "nccl_communicator.hpp"

#include <string>

#include "../../backend-cuda/src/device_placement.hpp"
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
  // backend/cuda's rule (device_placement.hpp): the launcher's local rank modulo the GPU count.
  // MPI's own node-local rank would be right too, but the backend cannot see MPI: without a
  // launcher variable both would land on GPU 0, so a node with several ranks is refused — by every
  // rank at once (the verdict is all-reduced), so none waits for the NCCL id until its timeout.
  const auto launcher = loom_cuda::launcher_local_rank();
  float unplaced = !launcher && local_rank() != 0 ? 1.0f : 0.0f;
  all_reduce_sum(&unplaced, 1);
  if (unplaced > 0)
    throw loom::UnsupportedError(
        "communicator/nccl: " + std::to_string(static_cast<int>(unplaced)) +
        " rank(s) share a node with another, but the launcher set none of OMPI_COMM_WORLD_LOCAL_RANK, "
        "SLURM_LOCALID, MPI_LOCALRANKID, LOCAL_RANK, so backend/cuda and communicator/nccl cannot tell a "
        "node's "
        "ranks apart (all would take GPU 0): launch with mpirun or srun, or export LOCAL_RANK per process");
  if (launcher && launcher->rank != local_rank())
    context.log(loom::LogLevel::warn,
                std::string("communicator/nccl: ") + launcher->variable + " says local rank " +
                    std::to_string(launcher->rank) + " but MPI's node communicator says " +
                    std::to_string(local_rank()) + "; the GPU follows " + launcher->variable);
  const loom_cuda::DeviceChoice choice =
      loom_cuda::choose_device(loom_cuda::kDeviceFromLocalRank, launcher, devices);
  device_ = choice.index;
  check_cuda(cudaSetDevice(device_), "cudaSetDevice");
  ncclUniqueId id{};
  if (rank() == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  broadcast(&id, sizeof(id), 0);
  check_nccl(ncclCommInitRank(&comm_, size(), id, rank()), "ncclCommInitRank");
  context.log(loom::LogLevel::info, "rank " + std::to_string(rank()) + " on GPU " + std::to_string(device_) +
                                        " (" + choice.why + ")");
}

NcclCommunicator::~NcclCommunicator() {
  if (comm_ == nullptr) return;
  // After an exception peers may never join a collective again: abort instead of a clean destroy.
  if (std::uncaught_exceptions() > 0)
    ncclCommAbort(comm_);
  else
    ncclCommDestroy(comm_);
}

void NcclCommunicator::require_device(const char* what, const void* data) const {
  require_usable(what);
  if (comm_ == nullptr)
    throw loom::Error(std::string("communicator/nccl: ") + what + " without a NCCL communicator");
  // The buffer must be memory of this rank's GPU: a [backend] device that overrides the local
  // rank would otherwise hand NCCL another GPU's memory (a hang or a fault, not an error message).
  if (data == nullptr) return;  // an empty collective
  cudaPointerAttributes attributes{};
  const cudaError_t found = cudaPointerGetAttributes(&attributes, data);
  if (found != cudaSuccess) (void)cudaGetLastError();
  const bool device_memory = found == cudaSuccess && (attributes.type == cudaMemoryTypeDevice ||
                                                      attributes.type == cudaMemoryTypeManaged);
  if (!device_memory || attributes.device != device_)
    throw loom::Error(
        std::string("communicator/nccl: ") + what + " of a buffer that is not memory of GPU " +
            std::to_string(device_) + " (" +
            (device_memory ? "it is on GPU " + std::to_string(attributes.device)
                           : std::string("host memory")) +
            "): backend/cuda and communicator/nccl must use the same GPU; remove [backend] device so "
            "both follow the launcher's local rank",
        LOOM_E_DEVICE);
}

void NcclCommunicator::device_all_reduce(void* data, size_t count, loom::DType dtype, loom::ReduceOp op,
                                         void* stream) {
  require_device("device all-reduce", data);
  check_nccl(
      ncclAllReduce(data, data, count, nccl_type(dtype), op == loom::ReduceOp::mean ? ncclAvg : ncclSum,
                    comm_, static_cast<cudaStream_t>(stream)),
      "ncclAllReduce");
}

void NcclCommunicator::device_broadcast(void* data, size_t bytes, int root, void* stream) {
  require_device("device broadcast", data);
  check_nccl(ncclBroadcast(data, data, bytes, ncclUint8, root, comm_, static_cast<cudaStream_t>(stream)),
             "ncclBroadcast");
}

void NcclCommunicator::device_all_gather(const void* send, size_t bytes, void* receive, void* stream) {
  require_device("device all-gather", send);
  require_device("device all-gather", receive);
  check_nccl(ncclAllGather(send, receive, bytes, ncclUint8, comm_, static_cast<cudaStream_t>(stream)),
             "ncclAllGather");
}

}  // namespace loom_nccl
