// The shape and scalar parameters of one fused attention call, as every attention kernel takes
// them (the f32 kernels of attention_forward.cu/attention_backward.cu and the Tensor-Core kernels
// of flash_attention_*.cuh). Plain C++: the CPU-driven kernel tests include it too.
#pragma once

#include <cstdint>

namespace loom_cuda {

struct AttentionShape {
  int64_t batch, heads, seq, head_dim;
  float scale;
  bool dropout;
  uint32_t threshold;  // dropout_threshold(p): an element is dropped when its Philox word is below
  float inv_keep;      // 1 / (1 − p)
  uint64_t seed, offset;
  int64_t window = -1;  // the band |i − j| ≤ window of windowed attention (attention_band.cuh); < 0: none
};

}  // namespace loom_cuda
