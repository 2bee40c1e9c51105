// The backend-cuda plugin: component backend/cuda, offering fused attention and its windowed form,
// rotary position embeddings, the gated GELU of GeGLU, its device description,
// the optimizer passes (which also write the 16-bit working copy), the fused residual + LayerNorm,
// the linear layer with its bias in the GEMM's epilogue, bias + GELU backward and the bias gradient
// with their 16-bit copies, the extent multiple its GEMMs want,
// the count of the host's waits for the device, per-op timing and its memory usage.
#include "loom/sdk/plugin.hpp"

#include "cuda_backend.hpp"

LOOM_PLUGIN(
    "backend-cuda", "0.1.0", "Compute backend on an NVIDIA GPU (cuBLASLt GEMM, CUDA kernels)",
    loom::component<loom::Backend, loom_cuda::CudaBackend>(
        "cuda", "0.3.0",
        "f32 + bf16/f16 ops and fused (also windowed) attention on one GPU; options device, tf32, "
        "sync_check, tensor_core_attention",
        loom::offers<loom::FusedAttention, loom::WindowedAttention, loom::RotaryEmbedding, loom::PackedAttention,
                     loom::GatedGelu,
                     loom::DeviceDescription, loom::OptimizerSteps, loom::OptimizerWorkingCopy,
                     loom::ResidualLayerNorm, loom::ResidualLayerNormBackwardCopy, loom::LinearBias,
                     loom::BiasGeluBackwardCopy, loom::BiasGradCopy, loom::GemmExtentAlignment,
                     loom::TransferCounter, loom::OpProfiler, loom::MemoryUsage>{}))
