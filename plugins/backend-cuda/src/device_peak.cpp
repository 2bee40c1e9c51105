// Device description and dense bf16 peak (device_peak.hpp).
#include "device_peak.hpp"

#include <cuda_runtime.h>

#include <string>

#include "cuda_check.hpp"

namespace loom_cuda {

double dense_bf16_peak(int major, int minor, int multiprocessors, int clock_khz) {
  // Published dense bf16 peaks of the data-centre parts (whitepapers): per SM at the
  // Tensor-Core boost clock NVIDIA quotes, so 132-SM H100 SXM gives 989.4 TFLOP/s.
  if (major == 9 && minor == 0) return multiprocessors * 4096.0 * (multiprocessors >= 132 ? 1.830e9 : 1.620e9);
  if (major == 8 && minor == 0) return multiprocessors * 2048.0 * 1.410e9;
  // Consumer Ampere / Ada (sm_86, sm_89): 512 dense bf16 FLOPs per clock per SM.
  if (major == 8 && (minor == 6 || minor == 9)) return multiprocessors * 512.0 * clock_khz * 1e3;
  return 0.0;
}

loom::DeviceInfo describe_device(int index) {
  cudaDeviceProp props{};
  cuda_check(cudaGetDeviceProperties(&props, index), "backend/cuda: cudaGetDeviceProperties");
  int clock_khz = 0;
  if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, index) != cudaSuccess) {
    (void)cudaGetLastError();
    clock_khz = 0;
  }
  loom::DeviceInfo info{};
  const std::string name(props.name);  // NUL-terminated in a 256-byte field; ours has 128
  name.copy(info.name, sizeof info.name - 1);
  info.multiprocessors = props.multiProcessorCount;
  info.peak_dense_bf16_flops = dense_bf16_peak(props.major, props.minor, props.multiProcessorCount, clock_khz);
  return info;
}

}  // namespace loom_cuda
