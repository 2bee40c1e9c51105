// What `loom bench` says about the GPU: name, SM count and the dense bf16 Tensor-Core peak that
// its "share of peak" (MFU) divides by.
#pragma once

#include "loom/sdk/ops/device_description.hpp"

namespace loom_cuda {

/// Dense bf16 FLOP/s of a device from its compute capability, SM count and boost clock (kHz);
/// 0 when the architecture is not in the table. Data-centre parts use NVIDIA's published figures
/// (H100 SXM 989.4 TFLOP/s, H100 PCIe 756, A100 312), which assume their Tensor-Core boost clock
/// rather than the reported maximum; others are SMs × bf16 FLOPs per clock per SM × clock.
double dense_bf16_peak(int major, int minor, int multiprocessors, int clock_khz);

/// Name, SM count and peak of CUDA device `index` (peak_allocated_bytes left 0).
loom::DeviceInfo describe_device(int index);

}  // namespace loom_cuda
