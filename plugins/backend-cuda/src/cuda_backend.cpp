// CudaBackend construction, options, memory, copies, the shared scratch/staging areas, and the
// wait points: the only places the host waits for the device, where the device error record is
// read and reported (device_error_record.hpp) and every wait is counted (TransferCounter); per-op
// timing switched on and read (OpProfiler, cuda_op_timer.hpp).
#include "cuda_backend.hpp"

#include <cstdlib>
#include <string>

#include "cublaslt_gemm.hpp"
#include "cuda_check.hpp"
#include "cuda_op_timer.hpp"
#include "device_peak.hpp"
#include "device_placement.hpp"
#include "loom/sdk/plugin.hpp"

namespace loom_cuda {

namespace {

/// The number of visible devices; throws UnsupportedError when there is none (or no driver).
int visible_devices() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    (void)cudaGetLastError();
    throw loom::UnsupportedError(std::string("backend/cuda: no CUDA device (cudaGetDeviceCount: ") +
                                 cudaGetErrorString(status) + ")");
  }
  if (count == 0)
    throw loom::UnsupportedError("backend/cuda: no CUDA device (cudaGetDeviceCount: 0 devices)");
  return count;
}

int read_device(loom::ComponentContext& context) {
  return static_cast<int>(context.options().get<int64_t>("device", kDeviceFromLocalRank,
                                                         loom::Range{kDeviceFromLocalRank, 1024}));
}

/// LOOM_CUDA_SYNC_CHECK=1 turns sync_check on for every backend/cuda of the process (for runs
/// whose recipe one would rather not edit, and for the tests); 0 or unset leaves the option.
bool sync_check_from_environment() {
  const char* text = std::getenv("LOOM_CUDA_SYNC_CHECK");
  if (text == nullptr || *text == '\0') return false;
  const std::string value = text;
  if (value == "1" || value == "true") return true;
  if (value == "0" || value == "false") return false;
  throw loom::ConfigError("LOOM_CUDA_SYNC_CHECK = \"" + value + "\": use 1 (check every op) or 0");
}

bool read_tf32(loom::ComponentContext& context) {
  // `threads` sizes backend/cpu's pool; accepted here (and ignored: the ops run on the device) so
  // a CPU recipe runs on the GPU with only `component` changed.
  if (context.options().get<int64_t>("threads", 0, loom::Range{0, 4096}) > 0)
    context.log(loom::LogLevel::info, "backend/cuda ignores `threads` (a backend/cpu option)");
  return context.options().get<bool>("tf32", false);
}

}  // namespace

CudaBackend::CudaBackend(loom::ComponentContext& context) : tf32_(read_tf32(context)) {
  const int device = read_device(context);
  sync_check_ = context.options().get<bool>("sync_check", false) || sync_check_from_environment();
  tensor_core_attention_ = context.options().get<bool>("tensor_core_attention", true);
  if (context.dry_run()) {
    device_index_ = device < 0 ? 0 : device;
    return;  // `loom check`: options only, no device
  }
  acquire(device);
  context.log(loom::LogLevel::info,
              "backend/cuda on GPU " + std::to_string(device_index_) + " (" + placement_ + ")" +
                  (sync_check_ ? "; sync_check: every op is waited for and checked" : ""));
}

CudaBackend::CudaBackend(int device, bool tf32) : tf32_(tf32), sync_check_(sync_check_from_environment()) {
  acquire(device);
}

void CudaBackend::acquire(int device) {
  // One rule with communicator/nccl (device_placement.hpp), so a rank's two components agree.
  const DeviceChoice choice = choose_device(device, launcher_local_rank(), visible_devices());
  device_index_ = choice.index;
  placement_ = choice.why;
  cuda_check(cudaSetDevice(device_index_), "backend/cuda: cudaSetDevice");
  info_ = describe_device(device_index_);
  cuda_check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "backend/cuda: cudaStreamCreate");
  allocator_.set_default_stream(stream_);  // before the GEMM engine allocates its workspace
  try {
    cuda_check(cudaEventCreateWithFlags(&staging_done_, cudaEventDisableTiming),
               "backend/cuda: cudaEventCreate");
    // The error record lives in device memory (kernels claim it with a device-scope atomicCAS);
    // each wait copies it into pinned memory on the way, so reading it costs no extra wait.
    cuda_check(cudaMalloc(&error_record_, sizeof(DeviceErrorRecord)), "backend/cuda: error record");
    cuda_check(cudaMemsetAsync(error_record_, 0, sizeof(DeviceErrorRecord), stream_),
               "backend/cuda: error record");
    cuda_check(cudaMallocHost(&error_snapshot_, sizeof(DeviceErrorRecord)), "backend/cuda: error record");
    *error_snapshot_ = DeviceErrorRecord{};
    gemm_ = std::make_unique<CublasLtGemm>(allocator_, stream_);
  } catch (...) {
    if (error_snapshot_ != nullptr) (void)cudaFreeHost(error_snapshot_);
    if (error_record_ != nullptr) (void)cudaFree(error_record_);
    if (staging_done_ != nullptr) (void)cudaEventDestroy(staging_done_);
    (void)cudaStreamDestroy(stream_);
    error_snapshot_ = nullptr;
    error_record_ = nullptr;
    staging_done_ = nullptr;
    stream_ = nullptr;
    throw;
  }
}

loom::DeviceInfo CudaBackend::device_info() const {
  loom::DeviceInfo info = info_;
  info.peak_allocated_bytes = allocator_.peak_allocated_bytes();
  return info;
}

void CudaBackend::check_previous_op(const char* next) const {
  if (unchecked_op_ == nullptr) return;
  const char* op = unchecked_op_;
  unchecked_op_ = nullptr;
  ++synchronizations_;
  cudaError_t status = wait_for_stream();
  if (status == cudaSuccess) status = cudaGetLastError();
  if (status != cudaSuccess)
    throw loom::Error(std::string("backend/cuda: device fault in ") + op + " (sync_check, before " + next +
                          "): " + cudaGetErrorName(status) + " (" + cudaGetErrorString(status) + ")",
                      LOOM_E_DEVICE);
  report_device_error((std::string("sync_check, before ") + next).c_str());
}

cudaError_t CudaBackend::wait_for_stream() const {
  // Enqueued behind every op, so the snapshot holds whatever they recorded once the wait returns.
  cudaError_t status = cudaMemcpyAsync(error_snapshot_, error_record_, sizeof(DeviceErrorRecord),
                                       cudaMemcpyDeviceToHost, stream_);
  if (status == cudaSuccess) status = cudaStreamSynchronize(stream_);
  if (status == cudaSuccess) staging_pending_ = false;
  return status;
}

void CudaBackend::report_device_error(const char* where) const {
  if (error_snapshot_->op == static_cast<int32_t>(CheckedOp::none)) return;
  const DeviceErrorRecord found = *error_snapshot_;
  *error_snapshot_ = DeviceErrorRecord{};
  // Cleared in stream order: ops enqueued after this report record into an empty record again.
  cuda_check(cudaMemsetAsync(error_record_, 0, sizeof(DeviceErrorRecord), stream_), where);
  throw loom::Error(device_error_message(found, where));
}

loom::TransferCounts CudaBackend::transfer_counts() const {
  return {device_to_host_copies_.load(), synchronizations_.load(), host_to_device_copies_.load()};
}

void CudaBackend::bind_device() const {
  int current = -1;
  if (cudaGetDevice(&current) != cudaSuccess || current != device_index_)
    cuda_check(cudaSetDevice(device_index_), "backend/cuda: cudaSetDevice");
}

CudaBackend::~CudaBackend() {
  if (stream_ == nullptr) return;  // a dry run acquired nothing
  (void)cudaSetDevice(device_index_);
  (void)cudaStreamSynchronize(stream_);
  timing_ = nullptr;
  op_timer_.reset();
  gemm_.reset();
  allocator_.deallocate(scratch_);
  for (const RotaryTable& table : rotary_tables_) allocator_.deallocate(table.data);
  if (staging_ != nullptr) (void)cudaFreeHost(staging_);
  (void)cudaFreeHost(error_snapshot_);
  (void)cudaFree(error_record_);
  (void)cudaEventDestroy(staging_done_);
  (void)cudaStreamDestroy(stream_);
}

void* CudaBackend::allocate(size_t bytes) {
  bind_device();
  return allocator_.allocate(bytes);
}

void CudaBackend::deallocate(void* data) {
  allocator_.deallocate(data);
}

void CudaBackend::copy_from_host(void* device_dst, const void* host_src, size_t bytes) {
  if (bytes == 0) return;
  bind_device();
  if (sync_check_) check_previous_op("copy_from_host");
  const loom_backend::OpTimingScope timed(timing_, "copy_from_host");
  ++host_to_device_copies_;
  // From pageable memory cudaMemcpyAsync returns once the source has been staged, so the caller
  // may reuse host_src immediately; the copy is ordered on the stream like every op.
  cuda_check(cudaMemcpyAsync(device_dst, host_src, bytes, cudaMemcpyHostToDevice, stream_), "copy_from_host");
}

void CudaBackend::copy_to_host(void* host_dst, const void* device_src, size_t bytes) {
  if (bytes == 0) return;
  bind_device();
  if (sync_check_) check_previous_op("copy_to_host");
  const loom_backend::OpTimingScope timed(timing_, "copy_to_host");
  ++device_to_host_copies_;
  cuda_check(cudaMemcpyAsync(host_dst, device_src, bytes, cudaMemcpyDeviceToHost, stream_), "copy_to_host");
  cuda_check(wait_for_stream(), "copy_to_host");
  report_device_error("copy_to_host");
}

void CudaBackend::synchronize() {
  bind_device();
  if (sync_check_) check_previous_op("synchronize");
  ++synchronizations_;
  cuda_check(wait_for_stream(), "synchronize");
  report_device_error("synchronize");
}

void* CudaBackend::scratch(size_t bytes) {
  if (bytes > scratch_bytes_) {
    // The old area may still be read by queued kernels; the allocator only hands it out again to
    // work enqueued later on the same stream, so releasing it now is safe.
    allocator_.deallocate(scratch_);
    scratch_ = nullptr;
    scratch_bytes_ = 0;
    scratch_ = allocator_.allocate(bytes);
    scratch_bytes_ = CachingAllocator::size_class(bytes);
  }
  return scratch_;
}

void* CudaBackend::staging(size_t bytes) {
  // The previous upload through the staging area must be finished before it is reused: unless a
  // wait point has passed since it was enqueued, that is a wait for the device, and counted so.
  if (staging_pending_) {
    ++synchronizations_;
    cuda_check(cudaEventSynchronize(staging_done_), "backend/cuda: staging");
    staging_pending_ = false;
  }
  if (bytes > staging_bytes_) {
    if (staging_ != nullptr) cuda_check(cudaFreeHost(staging_), "backend/cuda: cudaFreeHost");
    staging_ = nullptr;
    staging_bytes_ = 0;
    const size_t rounded = CachingAllocator::size_class(bytes);
    cuda_check(cudaMallocHost(&staging_, rounded), "backend/cuda: cudaMallocHost");
    staging_bytes_ = rounded;
  }
  return staging_;
}

void CudaBackend::staging_enqueued() {
  cuda_check(cudaEventRecord(staging_done_, stream_), "backend/cuda: cudaEventRecord");
  staging_pending_ = true;
}

void CudaBackend::set_op_profiling(bool on) {
  if (on && op_timer_ == nullptr) op_timer_ = std::make_unique<CudaEventOpTimer>(stream_);
  timing_ = on ? op_timer_.get() : nullptr;
}

size_t CudaBackend::take_op_profile(loom::OpFamilyTime* totals, size_t count) {
  if (op_timer_ == nullptr) return loom_backend::OpTotals{}.take(totals, count);  // nothing timed yet
  bind_device();
  return op_timer_->take(totals, count);
}

bool CudaBackend::fused_attention(int64_t head_dim, int64_t max_seq) const {
  // The kernels (attention_forward.cu, attention_backward.cu) keep one head row in registers as
  // up to four 32-lane chunks: d ≤ 128, a multiple of 8. Sequence length only bounds run time.
  return head_dim >= 8 && head_dim <= 128 && head_dim % 8 == 0 && max_seq >= 1 && max_seq <= 4096;
}

}  // namespace loom_cuda
