// The backend-cpu plugin: component backend/cpu, offering fused attention (also with a sliding
// window), rotary position embeddings, the gated GELU, its device description,
// the optimizer passes (which also write the 16-bit working copy), the fused residual LayerNorm
// (and its backward with the 16-bit copy), the bias gradient with its 16-bit copy,
// the linear layer with its bias, bias + GELU backward with its 16-bit copy, per-op timing and its
// memory usage.
#include "loom/sdk/plugin.hpp"

#include "cpu_backend.hpp"

LOOM_PLUGIN(
    "backend-cpu", "0.1.0", "Compute backend on the host CPU (oneDNN GEMM, OpenMP ops)",
    loom::component<loom::Backend, loom_cpu::CpuBackend>(
        "cpu", "0.3.0", "fp32 + bf16/f16 ops on the CPU, reference fused attention; threads option",
        loom::offers<loom::FusedAttention, loom::WindowedAttention, loom::RotaryEmbedding,
                     loom::PackedAttention, loom::GatedGelu, loom::DeviceDescription, loom::OptimizerSteps,
                     loom::OptimizerWorkingCopy, loom::ResidualLayerNorm, loom::ResidualLayerNormBackwardCopy,
                     loom::LinearBias, loom::BiasGeluBackwardCopy, loom::BiasGradCopy, loom::OpProfiler,
                     loom::MemoryUsage>{}))
