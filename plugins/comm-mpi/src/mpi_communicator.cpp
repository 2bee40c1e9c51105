// MpiCommunicator; see mpi_communicator.hpp.
#include "mpi_communicator.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <climits>
#include <exception>

#include "bf16_reduction.hpp"
#include "loom/sdk/error.hpp"

namespace loom_mpi {
namespace {

// MPI counts are ints: larger buffers go as several collectives.
constexpr size_t kMaxChunk = size_t{1} << 30;

// Open MPI loads its transports as plugins that resolve symbols of libmpi globally; the host
// loads this plugin (and so libmpi) with RTLD_LOCAL, which would hide them. Re-opening the
// already mapped libmpi with RTLD_GLOBAL makes its symbols visible again (mpi4py does the same).
void make_mpi_symbols_global() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&MPI_Init_thread), &info) != 0 && info.dli_fname != nullptr)
    dlopen(info.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD);
}

float divisor_for(loom::ReduceOp op, int size) {
  return op == loom::ReduceOp::mean ? static_cast<float>(size) : 1.0f;
}

}  // namespace

MpiCommunicator::MpiCommunicator(loom::ComponentContext& context) {
  timeout_s_ = context.options().get<double>("timeout_s", 300.0, loom::Range{0.001, 1e9});
  dry_run_ = context.dry_run();
  if (dry_run_) return;
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) {
    make_mpi_symbols_global();
    int provided = 0;
    check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    initialised_here_ = true;
  }
  check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &world_), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(world_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(world_, &rank_);
  MPI_Comm_size(world_, &size_);
  MPI_Comm node = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(world_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node),
            "MPI_Comm_split_type");
  MPI_Comm_rank(node, &local_rank_);
  MPI_Comm_free(&node);
  probe_ = std::make_unique<PeerProbe>(world_);
  context.log(loom::LogLevel::debug, "rank " + std::to_string(rank_) + " of " + std::to_string(size_) +
                                         " (local rank " + std::to_string(local_rank_) + "), timeout " +
                                         std::to_string(timeout_s_) + " s");
}

MpiCommunicator::~MpiCommunicator() {
  // After a failure (ours, or an exception unwinding the host) peers may be gone or stuck in a
  // collective; MPI_Finalize would wait for them. Exiting without it lets mpirun/srun end the job.
  if (!initialised_here_ || broken_ || std::uncaught_exceptions() > 0) return;
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (!finalised) MPI_Finalize();
}

void MpiCommunicator::require_usable(const char* what) const {
  if (dry_run_) throw loom::Error(std::string("communicator/mpi: ") + what + " under a dry run");
  if (broken_)
    throw loom::Error(std::string("communicator/mpi: ") + what +
                      " after an earlier communication failure; restart the job (--resume auto)");
}

void MpiCommunicator::complete(std::vector<MPI_Request>& requests, const std::string& what) {
  bool done = false;
  try {
    done = poll_requests(requests, timeout_s_, *probe_);
  } catch (const loom::Error&) {
    broken_ = true;
    throw;
  }
  if (done) return;
  broken_ = true;
  const std::vector<int> silent = probe_->unresponsive(std::min(5.0, std::max(1.0, timeout_s_)));
  const std::string who = silent.empty()
                              ? "every peer still answers; one is likely stuck outside communication"
                              : rank_list(silent) + " did not respond (dead or stalled)";
  throw loom::Error("communicator/mpi: rank " + std::to_string(rank_) + ": " + what +
                    " made no progress for " + std::to_string(static_cast<int>(timeout_s_)) +
                    " s ([communicator] timeout_s): " + who);
}

void MpiCommunicator::all_reduce_sum(float* data, size_t count) {
  all_reduce(data, count, loom::DType::f32, loom::ReduceOp::sum);
}

void MpiCommunicator::all_reduce_mean(float* data, size_t count) {
  all_reduce(data, count, loom::DType::f32, loom::ReduceOp::mean);
}

void MpiCommunicator::all_reduce(void* data, size_t count, loom::DType dtype, loom::ReduceOp op) {
  wait(start_all_reduce(data, count, dtype, op));
}

std::vector<MPI_Request> MpiCommunicator::start_reduce_requests(void* data, size_t count, loom::DType dtype) {
  if (dtype != loom::DType::f32 && dtype != loom::DType::bf16)
    throw loom::UnsupportedError("communicator/mpi: all-reduce supports f32 and bf16 buffers");
  const Bf16Reduction& bf16 = Bf16Reduction::instance();
  const MPI_Datatype type = dtype == loom::DType::f32 ? MPI_FLOAT : bf16.type();
  const MPI_Op mpi_op = dtype == loom::DType::f32 ? MPI_SUM : bf16.sum();
  const size_t element = loom::dtype_size(dtype);
  std::vector<MPI_Request> requests;
  for (size_t first = 0; first < count; first += kMaxChunk) {
    const auto n = static_cast<int>(std::min(kMaxChunk, count - first));
    MPI_Request request;
    check_mpi(MPI_Iallreduce(MPI_IN_PLACE, static_cast<char*>(data) + first * element, n, type, mpi_op,
                             world_, &request),
              "MPI_Iallreduce");
    requests.push_back(request);
  }
  return requests;
}

void MpiCommunicator::finish_reduce(const Pending& pending) const {
  if (pending.op != loom::ReduceOp::mean || size_ == 1) return;
  const float divisor = divisor_for(pending.op, size_);
  if (pending.dtype == loom::DType::f32) {
    float* values = static_cast<float*>(pending.data);
    for (size_t i = 0; i < pending.count; ++i) values[i] /= divisor;
  } else {
    divide_bf16(static_cast<uint16_t*>(pending.data), pending.count, divisor);
  }
}

loom::CollectiveHandle MpiCommunicator::start_all_reduce(void* data, size_t count, loom::DType dtype,
                                                         loom::ReduceOp op) {
  require_usable("all-reduce");
  const loom::CollectiveHandle handle = next_handle_++;
  pending_.emplace(handle, Pending{start_reduce_requests(data, count, dtype), data, count, dtype, op});
  return handle;
}

bool MpiCommunicator::test(loom::CollectiveHandle handle) {
  require_usable("test");
  auto found = pending_.find(handle);
  if (found == pending_.end()) throw loom::Error("communicator/mpi: test of an unknown collective handle");
  int done = 0;
  check_mpi(MPI_Testall(static_cast<int>(found->second.requests.size()), found->second.requests.data(), &done,
                        MPI_STATUSES_IGNORE),
            "MPI_Testall");
  probe_->serve();
  if (!done) return false;
  finish_reduce(found->second);
  pending_.erase(found);
  return true;
}

void MpiCommunicator::wait(loom::CollectiveHandle handle) {
  require_usable("wait");
  auto found = pending_.find(handle);
  if (found == pending_.end()) throw loom::Error("communicator/mpi: wait on an unknown collective handle");
  complete(found->second.requests, "all-reduce of " + std::to_string(found->second.count) + " elements");
  finish_reduce(found->second);
  pending_.erase(found);
}

void MpiCommunicator::broadcast(void* data, size_t bytes, int root) {
  require_usable("broadcast");
  if (root < 0 || root >= size_)
    throw loom::Error("communicator/mpi: broadcast root " + std::to_string(root) + " is not a rank of " +
                      std::to_string(size_));
  std::vector<MPI_Request> requests;
  for (size_t first = 0; first < bytes; first += kMaxChunk) {
    MPI_Request request;
    check_mpi(
        MPI_Ibcast(static_cast<char*>(data) + first, static_cast<int>(std::min(kMaxChunk, bytes - first)),
                   MPI_BYTE, root, world_, &request),
        "MPI_Ibcast");
    requests.push_back(request);
  }
  complete(requests, "broadcast of " + std::to_string(bytes) + " bytes from rank " + std::to_string(root));
}

void MpiCommunicator::barrier() {
  require_usable("barrier");
  std::vector<MPI_Request> requests(1);
  check_mpi(MPI_Ibarrier(world_, requests.data()), "MPI_Ibarrier");
  complete(requests, "barrier");
}

void MpiCommunicator::all_gather(const void* send, size_t bytes, void* receive) {
  require_usable("all-gather");
  if (bytes > static_cast<size_t>(INT_MAX))
    throw loom::UnsupportedError("communicator/mpi: all-gather of more than 2 GiB per rank");
  std::vector<MPI_Request> requests(1);
  check_mpi(MPI_Iallgather(send, static_cast<int>(bytes), MPI_BYTE, receive, static_cast<int>(bytes),
                           MPI_BYTE, world_, requests.data()),
            "MPI_Iallgather");
  complete(requests, "all-gather of " + std::to_string(bytes) + " bytes");
}

void MpiCommunicator::device_all_reduce(void*, size_t, loom::DType, loom::ReduceOp, void*) {
  throw loom::UnsupportedError(
      "communicator/mpi works on host memory only; use communicator/nccl for device buffers");
}
void MpiCommunicator::device_broadcast(void*, size_t, int, void*) {
  throw loom::UnsupportedError(
      "communicator/mpi works on host memory only; use communicator/nccl for device buffers");
}
void MpiCommunicator::device_all_gather(const void*, size_t, void*, void*) {
  throw loom::UnsupportedError(
      "communicator/mpi works on host memory only; use communicator/nccl for device buffers");
}

}  // namespace loom_mpi
