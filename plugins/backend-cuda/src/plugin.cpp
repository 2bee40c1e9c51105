// The backend-cuda plugin: component backend/cuda (interface version 2: fused attention).
#include "loom/sdk/plugin.hpp"

#include "cuda_backend.hpp"

LOOM_PLUGIN("backend-cuda", "0.1.0", "Compute backend on an NVIDIA GPU (cuBLASLt GEMM, CUDA kernels)",
            loom::component<loom::Backend2, loom_cuda::CudaBackend>(
                "cuda", "0.1.0", "f32 + bf16/f16 ops and fused attention on one GPU; options device, tf32"))
