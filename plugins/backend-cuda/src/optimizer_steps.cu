// backend/cuda's OptimizerSteps (loom/sdk/ops/optimizer_steps.hpp): NVLAMB, AdamW and SGD as
// multi-tensor passes over the flat buffers in GPU memory, with nothing read back between them.
//
// A plan uploads, once, the segment table and its work blocks (the host optimizers' cut:
// libs/optimizer-passes/include/loom_optimizer/work_blocks.hpp) and holds the device scratch:
// one f64 partial sum per block and reduction, one f32 step size per segment, and the step's
// scalars (Σ g², N, c). One CUDA block runs one work block; launches per optimizer step:
//   gradient_norm:  block_grad_squares (Σ g² per block) → grad_total (Σ in a fixed tree, flag)
//   adamw_step:     adamw_update
//   lamb_step:      lamb_stage1 (moments; Σ w², Σ u² per block) → lamb_step_sizes (per segment)
//                   → lamb_stage2 (w −= r·u on trust-ratio segments)
//   sgd_step:       sgd_update
// Every update kernel derives N, the clip divisor and the gradient multiplier itself from the
// device Σ g² (a few f64 operations per thread), so the host never waits between passes, and
// returns at once when Σ g² is not finite (the step then changes nothing).
//
// With a working copy set on the plan (OptimizerWorkingCopy), the kernel that writes an element's
// final weight of the step — adamw_update, sgd_update, lamb_stage2 on trust-ratio segments,
// lamb_stage1 on the others — stores its bf16/f16 value too, rounded by float_storage.cuh's
// from_float as the cast kernels round it, so the step needs no cast pass over the whole buffer.
//
// Numerics: the per-element arithmetic uses round-to-nearest intrinsics (__fmul_rn, __fadd_rn,
// __fdiv_rn, __fsqrt_rn), which nvcc never fuses, so it is the f32 arithmetic of the host
// optimizers operation for operation; the f64 scalars are IEEE as well. Reductions follow fixed
// trees (warp_reductions.cuh), never atomics, so results are deterministic; their order differs
// from the host's 8-lane sums, so norms agree with backend/cpu to the last bits of an f64.
#include <cmath>
#include <cstdint>
#include <vector>

#include "cuda_backend.hpp"
#include "cuda_check.hpp"
#include "float_storage.cuh"
#include "loom_backend/optimizer_contract.hpp"
#include "loom_optimizer/work_blocks.hpp"
#include "warp_reductions.cuh"

namespace loom_cuda {
namespace {

constexpr int kThreads = 256;        // per work block of up to 32768 elements
constexpr int kTotalThreads = 1024;  // the one block that sums the per-block partials

/// One work block as the kernels read it.
struct DeviceBlock {
  int64_t begin;
  int64_t end;
  int32_t segment;
  int32_t padding;
};

/// The scalars of the last step, in device memory.
struct StepScalars {
  double grad_sum_squares;  // Σ g² of the last gradient_norm
  double grad_norm;         // N of the last update
  double clip_divisor;      // c of the last update
};

/// The 16-bit working copy the update kernels write: data null when the plan has none.
struct WorkingCopy {
  void* data;
  loom::DType dtype;  // bf16 or f16
};

/// Device pointers of a plan's tables and scratch.
struct PlanView {
  const DeviceBlock* blocks;
  const loom::OptimizerSegment* segments;
  const int64_t* segment_first_block;  // [segments + 1]
  double* grad_partial;                // [blocks]
  double* weight_partial;              // [blocks]
  double* update_partial;              // [blocks]
  float* step_sizes;                   // [segments]
  StepScalars* scalars;
  int64_t block_count;  // an update launched over no block still runs one CUDA block to record N, c
  WorkingCopy working;  // set_working_copy's (none: data null)
};

// ---- the step's scalars, derived on the device --------------------------------------------------

/// N, c and the f32 gradient multiplier from the device Σ g² (the host optimizers' f64 formulas).
struct Scaling {
  double grad_norm;
  double divisor;
  float grad_mul;
  bool finite;
};

/// (f64 intrinsics: nvcc must not fuse N = √Σ·grad_scale into the + 1e-6 of the torch rule.)
__device__ Scaling derive_scaling(const StepScalars* scalars, loom::GradientScaling s) {
  Scaling out;
  out.grad_norm = __dmul_rn(__dsqrt_rn(scalars->grad_sum_squares), s.grad_scale);
  out.divisor = 1.0;
  if (s.clip == loom::ClipRule::above_max) {
    if (s.max_grad_norm > 0 && out.grad_norm > s.max_grad_norm)
      out.divisor = __ddiv_rn(out.grad_norm, s.max_grad_norm);
  } else if (s.clip == loom::ClipRule::torch_rule && s.max_grad_norm > 0) {
    const double divisor = __ddiv_rn(__dadd_rn(out.grad_norm, 1e-6), s.max_grad_norm);
    out.divisor = divisor > 1.0 ? divisor : 1.0;
  }
  out.grad_mul = __double2float_rn(__ddiv_rn(s.grad_scale, out.divisor));
  out.finite = isfinite(out.grad_norm);
  return out;
}

/// Block 0 records N and c of this update for read_report.
__device__ void record_scaling(StepScalars* scalars, const Scaling& s) {
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    scalars->grad_norm = s.grad_norm;
    scalars->clip_divisor = s.divisor;
  }
}

// ---- the element arithmetic (the host's, operation for operation) -------------------------------

struct AdamElement {
  float grad_mul, beta1, one_minus_beta1, beta2, one_minus_beta2, bias_correction1, bias_correction2, eps,
      weight_decay;
};

__device__ __forceinline__ AdamElement adam_element(const loom::AdamConstants& c, float grad_mul,
                                                    float weight_decay) {
  return {grad_mul,           c.beta1, c.one_minus_beta1, c.beta2, c.one_minus_beta2, c.bias_correction1,
          c.bias_correction2, c.eps,   weight_decay};
}

/// m = β1·m + (1−β1)·ĝ;  v = β2·v + (1−β2)·ĝ·ĝ
__device__ __forceinline__ void update_moments(float g, float& m, float& v, const AdamElement& c) {
  const float gk = __fmul_rn(g, c.grad_mul);
  m = __fadd_rn(__fmul_rn(c.beta1, m), __fmul_rn(c.one_minus_beta1, gk));
  v = __fadd_rn(__fmul_rn(c.beta2, v), __fmul_rn(__fmul_rn(c.one_minus_beta2, gk), gk));
}

/// u = (m / bc1) / (√(v / bc2) + eps) + wd·w
__device__ __forceinline__ float update_direction(float m, float v, float w, const AdamElement& c) {
  const float denominator = __fadd_rn(__fsqrt_rn(__fdiv_rn(v, c.bias_correction2)), c.eps);
  return __fadd_rn(__fdiv_rn(__fdiv_rn(m, c.bias_correction1), denominator), __fmul_rn(c.weight_decay, w));
}

/// Element i's final weight w of the step, stored in the working copy when there is one (the bits
/// of Backend::cast).
__device__ __forceinline__ void write_working_copy(const WorkingCopy& copy, int64_t i, float w) {
  if (copy.data == nullptr) return;
  if (copy.dtype == loom::DType::bf16)
    store(static_cast<loom::BFloat16*>(copy.data), i, w);
  else
    store(static_cast<loom::Half*>(copy.data), i, w);
}

// ---- gradient_norm ------------------------------------------------------------------------------

__global__ void block_grad_squares_kernel(const float* g, PlanView plan) {
  __shared__ double shared[32];
  const DeviceBlock block = plan.blocks[blockIdx.x];
  double sum = 0.0;
  for (int64_t i = block.begin + threadIdx.x; i < block.end; i += blockDim.x) {
    const double x = g[i];
    sum += x * x;
  }
  sum = block_sum(sum, shared);
  if (threadIdx.x == 0) plan.grad_partial[blockIdx.x] = sum;
}

/// One block: Σ of the partials in a fixed tree; the flag is 1 when it is not finite.
__global__ void grad_total_kernel(PlanView plan, int64_t blocks, int32_t* nonfinite_flag) {
  __shared__ double shared[32];
  double sum = 0.0;
  for (int64_t b = threadIdx.x; b < blocks; b += blockDim.x) sum += plan.grad_partial[b];
  sum = block_sum(sum, shared);
  if (threadIdx.x == 0) {
    plan.scalars->grad_sum_squares = sum;
    *nonfinite_flag = isfinite(sum) ? 0 : 1;
  }
}

// ---- AdamW --------------------------------------------------------------------------------------

struct AdamBuffers {
  float* w;
  const float* g;
  float* m;
  float* v;
};

/// Element i's AdamW step: the moments, then w −= lr·u and the working copy. Every load comes before
/// the first store: the compiler cannot know that w is not m or v (the buffers are disjoint by
/// contract), and a load after their stores would wait for them.
__device__ __forceinline__ void adam_step(const AdamBuffers& b, const PlanView& plan, int64_t i, const AdamElement& c,
                                          float lr) {
  const float g = b.g[i], w0 = b.w[i];
  float m = b.m[i], v = b.v[i];
  update_moments(g, m, v, c);
  b.m[i] = m;
  b.v[i] = v;
  const float w = __fsub_rn(w0, __fmul_rn(lr, update_direction(m, v, w0, c)));
  b.w[i] = w;
  write_working_copy(plan.working, i, w);
}

__global__ void adamw_update_kernel(AdamBuffers b, PlanView plan, loom::GradientScaling scaling,
                                    loom::AdamConstants constants, float lr) {
  const Scaling s = derive_scaling(plan.scalars, scaling);
  record_scaling(plan.scalars, s);
  if (!s.finite || blockIdx.x >= plan.block_count) return;
  const DeviceBlock block = plan.blocks[blockIdx.x];
  const AdamElement c = adam_element(constants, s.grad_mul, plan.segments[block.segment].weight_decay);
#pragma unroll 4
  for (int64_t i = block.begin + threadIdx.x; i < block.end; i += blockDim.x) adam_step(b, plan, i, c, lr);
}

// ---- NVLAMB ------------------------------------------------------------------------------------

/// Stage 1: moments; trust-ratio blocks sum w² (before the update) and u², the others finish here.
__global__ void lamb_stage1_kernel(AdamBuffers b, PlanView plan, loom::GradientScaling scaling,
                                   loom::AdamConstants constants, float lr) {
  __shared__ double shared[32];
  const Scaling s = derive_scaling(plan.scalars, scaling);
  record_scaling(plan.scalars, s);
  if (!s.finite || blockIdx.x >= plan.block_count) return;
  const DeviceBlock block = plan.blocks[blockIdx.x];
  const loom::OptimizerSegment segment = plan.segments[block.segment];
  const AdamElement c = adam_element(constants, s.grad_mul, segment.weight_decay);
  if (segment.trust_ratio == 0) {
#pragma unroll 4
    for (int64_t i = block.begin + threadIdx.x; i < block.end; i += blockDim.x) adam_step(b, plan, i, c, lr);
    if (threadIdx.x == 0) plan.weight_partial[blockIdx.x] = plan.update_partial[blockIdx.x] = 0.0;
    return;
  }
  double weights = 0.0, updates = 0.0;
#pragma unroll 4
  for (int64_t i = block.begin + threadIdx.x; i < block.end; i += blockDim.x) {
    const float g = b.g[i], w0 = b.w[i];  // every load before the first store, as in adam_step
    float m = b.m[i], v = b.v[i];
    update_moments(g, m, v, c);
    b.m[i] = m;
    b.v[i] = v;
    const double w = w0;
    const double u = update_direction(m, v, w0, c);
    weights += w * w;
    updates += u * u;
  }
  weights = block_sum(weights, shared);
  updates = block_sum(updates, shared);
  if (threadIdx.x == 0) {
    plan.weight_partial[blockIdx.x] = weights;
    plan.update_partial[blockIdx.x] = updates;
  }
}

/// One thread per segment: its blocks' partials in block order → r = f32(lr·‖w‖/‖u‖) or f32(lr).
__global__ void lamb_step_sizes_kernel(PlanView plan, int64_t segments, double lr) {
  const int64_t s = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  if (s >= segments) return;
  double weights = 0.0, updates = 0.0;
  for (int64_t b = plan.segment_first_block[s]; b < plan.segment_first_block[s + 1]; ++b) {
    weights += plan.weight_partial[b];
    updates += plan.update_partial[b];
  }
  const double w_norm = __dsqrt_rn(weights), u_norm = __dsqrt_rn(updates);
  const bool trust = plan.segments[s].trust_ratio != 0 && w_norm != 0.0 && u_norm != 0.0;
  plan.step_sizes[s] = __double2float_rn(trust ? __dmul_rn(lr, __ddiv_rn(w_norm, u_norm)) : lr);
}

/// Stage 2: w −= r·u on trust-ratio segments, u recomputed from the stage-1 moments.
__global__ void lamb_stage2_kernel(AdamBuffers b, PlanView plan, loom::GradientScaling scaling,
                                   loom::AdamConstants constants) {
  const Scaling s = derive_scaling(plan.scalars, scaling);
  if (!s.finite) return;
  const DeviceBlock block = plan.blocks[blockIdx.x];
  const loom::OptimizerSegment segment = plan.segments[block.segment];
  if (segment.trust_ratio == 0) return;
  const AdamElement c = adam_element(constants, s.grad_mul, segment.weight_decay);
  const float r = plan.step_sizes[block.segment];
#pragma unroll 4
  for (int64_t i = block.begin + threadIdx.x; i < block.end; i += blockDim.x) {
    const float w = __fsub_rn(b.w[i], __fmul_rn(r, update_direction(b.m[i], b.v[i], b.w[i], c)));
    b.w[i] = w;
    write_working_copy(plan.working, i, w);
  }
}

// ---- SGD ----------------------------------------------------------------------------------------

template <bool kMomentum, bool kNesterov>
__global__ void sgd_update_kernel(float* w, const float* g, float* buffer, PlanView plan,
                                  loom::GradientScaling scaling, loom::SgdConstants constants, float lr) {
  const Scaling s = derive_scaling(plan.scalars, scaling);
  record_scaling(plan.scalars, s);
  if (!s.finite || blockIdx.x >= plan.block_count) return;
  const DeviceBlock block = plan.blocks[blockIdx.x];
  const float weight_decay = plan.segments[block.segment].weight_decay;
  const bool first = constants.first_step != 0;
#pragma unroll 4
  for (int64_t i = block.begin + threadIdx.x; i < block.end; i += blockDim.x) {
    float d = __fadd_rn(__fmul_rn(g[i], s.grad_mul), __fmul_rn(weight_decay, w[i]));
    if constexpr (kMomentum) {
      const float b =
          first ? d : __fadd_rn(__fmul_rn(constants.momentum, buffer[i]), __fmul_rn(constants.keep, d));
      buffer[i] = b;
      d = kNesterov ? __fadd_rn(d, __fmul_rn(constants.momentum, b)) : b;
    }
    const float updated = __fsub_rn(w[i], __fmul_rn(lr, d));
    w[i] = updated;
    write_working_copy(plan.working, i, updated);
  }
}

size_t round_up(size_t bytes) {
  return (bytes + 255) / 256 * 256;
}

}  // namespace

/// The plan of one segment table: its tables and scratch in one device allocation.
class CudaOptimizerPlan final : public loom::OptimizerPlan {
 public:
  CudaOptimizerPlan(CudaBackend& backend, const std::vector<loom::OptimizerSegment>& segments, size_t total)
      : total_elements(total), segment_count(static_cast<int64_t>(segments.size())) {
    const std::vector<loom_optimizer::WorkBlock> cut = loom_optimizer::cut_into_blocks(segments);
    block_count = static_cast<int64_t>(cut.size());
    if (block_count > 2147483647) throw loom::Error("create_plan: too many work blocks");
    std::vector<DeviceBlock> blocks;
    blocks.reserve(cut.size());
    std::vector<int64_t> first_block(segments.size() + 1, 0);
    for (const loom_optimizer::WorkBlock& b : cut)
      blocks.push_back(
          {static_cast<int64_t>(b.begin), static_cast<int64_t>(b.end), static_cast<int32_t>(b.segment), 0});
    for (size_t s = 0, b = 0; s <= segments.size(); ++s) {
      while (b < cut.size() && cut[b].segment < s) ++b;
      first_block[s] = static_cast<int64_t>(b);
    }
    // Layout: blocks | segments | first blocks | 3 partials per block | step sizes | scalars.
    const size_t n_blocks = cut.size(), n_segments = segments.size();
    size_t offset = 0;
    const size_t at_blocks = offset;
    offset += round_up(n_blocks * sizeof(DeviceBlock));
    const size_t at_segments = offset;
    offset += round_up(n_segments * sizeof(loom::OptimizerSegment));
    const size_t at_first = offset;
    offset += round_up((n_segments + 1) * sizeof(int64_t));
    const size_t at_partials = offset;
    offset += round_up(3 * n_blocks * sizeof(double));
    const size_t at_steps = offset;
    offset += round_up(n_segments * sizeof(float));
    const size_t at_scalars = offset;
    offset += round_up(sizeof(StepScalars));
    area = loom::Buffer(backend, offset);
    char* base = static_cast<char*>(area.data());
    backend.copy_from_host(base + at_blocks, blocks.data(), n_blocks * sizeof(DeviceBlock));
    backend.copy_from_host(base + at_segments, segments.data(), n_segments * sizeof(loom::OptimizerSegment));
    backend.copy_from_host(base + at_first, first_block.data(), first_block.size() * sizeof(int64_t));
    const StepScalars zero{0.0, 0.0, 0.0};
    backend.copy_from_host(base + at_scalars, &zero, sizeof zero);
    auto* partials = reinterpret_cast<double*>(base + at_partials);
    view = {reinterpret_cast<const DeviceBlock*>(base + at_blocks),
            reinterpret_cast<const loom::OptimizerSegment*>(base + at_segments),
            reinterpret_cast<const int64_t*>(base + at_first),
            partials,
            partials + n_blocks,
            partials + 2 * n_blocks,
            reinterpret_cast<float*>(base + at_steps),
            reinterpret_cast<StepScalars*>(base + at_scalars),
            block_count,
            {nullptr, loom::DType::bf16}};
  }

  size_t total_elements;
  int64_t segment_count;
  int64_t block_count = 0;
  loom::Buffer area;
  PlanView view{};
  bool norm_pending = false;  // a gradient_norm no update has used yet
  loom::Tensor working;       // the working copy (view.working's tensor), for the alias checks
};

namespace {

CudaOptimizerPlan& cuda_plan(loom::OptimizerPlan& plan) {
  return static_cast<CudaOptimizerPlan&>(plan);
}

float* floats(const loom::Tensor& t) {
  return static_cast<float*>(t.data);
}

/// CUDA blocks of an update: one per work block, and one (recording N and c) when there is none.
unsigned update_blocks(const CudaOptimizerPlan& plan) {
  return static_cast<unsigned>(plan.block_count > 0 ? plan.block_count : 1);
}

/// The checks every update makes before its launches; consumes the pending gradient norm.
void begin_update(const loom_backend::ArgumentChecks& check, CudaOptimizerPlan& plan,
                  const loom::GradientScaling& scaling, double lr) {
  loom_backend::check_update_scalars(check, scaling, lr);
  check.require(plan.norm_pending, "no gradient_norm of these gradients since the last update");
  plan.norm_pending = false;
}

}  // namespace

loom::OptimizerPlan* CudaBackend::create_plan(const loom::OptimizerSegment* segments, size_t count,
                                              size_t total_elements) {
  const auto check = checks("create_plan");
  return new CudaOptimizerPlan(
      *this, loom_backend::checked_optimizer_segments(check, segments, count, total_elements),
      total_elements);
}

void CudaBackend::destroy_plan(loom::OptimizerPlan* plan) {
  delete static_cast<CudaOptimizerPlan*>(plan);
}

void CudaBackend::gradient_norm(loom::OptimizerPlan& plan_ref, const loom::Tensor& grads,
                                const loom::Tensor& nonfinite_flag) {
  const auto check = checks("gradient_norm");
  CudaOptimizerPlan& plan = cuda_plan(plan_ref);
  loom_backend::check_flat_buffer(check, "grads", grads, plan.total_elements);
  loom_backend::check_nonfinite_flag(check, nonfinite_flag);
  if (plan.block_count > 0)
    block_grad_squares_kernel<<<static_cast<unsigned>(plan.block_count), kThreads, 0, stream_>>>(
        floats(grads), plan.view);
  grad_total_kernel<<<1, kTotalThreads, 0, stream_>>>(plan.view, plan.block_count,
                                                      static_cast<int32_t*>(nonfinite_flag.data));
  check_launch("gradient_norm");
  plan.norm_pending = true;
}

void CudaBackend::adamw_step(loom::OptimizerPlan& plan_ref, const loom::Tensor& params,
                             const loom::Tensor& grads, const loom::Tensor& exp_avg,
                             const loom::Tensor& exp_avg_sq, const loom::GradientScaling& scaling,
                             const loom::AdamConstants& constants, double lr) {
  const auto check = checks("adamw_step");
  CudaOptimizerPlan& plan = cuda_plan(plan_ref);
  loom_backend::check_adam_buffers(check, plan.total_elements, params, grads, exp_avg, exp_avg_sq,
                                   plan.working);
  begin_update(check, plan, scaling, lr);
  const AdamBuffers buffers{floats(params), floats(grads), floats(exp_avg), floats(exp_avg_sq)};
  adamw_update_kernel<<<update_blocks(plan), kThreads, 0, stream_>>>(buffers, plan.view, scaling, constants,
                                                                     static_cast<float>(lr));
  check_launch("adamw_step");
}

void CudaBackend::lamb_step(loom::OptimizerPlan& plan_ref, const loom::Tensor& params,
                            const loom::Tensor& grads, const loom::Tensor& exp_avg,
                            const loom::Tensor& exp_avg_sq, const loom::GradientScaling& scaling,
                            const loom::AdamConstants& constants, double lr) {
  const auto check = checks("lamb_step");
  CudaOptimizerPlan& plan = cuda_plan(plan_ref);
  loom_backend::check_adam_buffers(check, plan.total_elements, params, grads, exp_avg, exp_avg_sq,
                                   plan.working);
  begin_update(check, plan, scaling, lr);
  const AdamBuffers buffers{floats(params), floats(grads), floats(exp_avg), floats(exp_avg_sq)};
  lamb_stage1_kernel<<<update_blocks(plan), kThreads, 0, stream_>>>(buffers, plan.view, scaling, constants,
                                                                    static_cast<float>(lr));
  if (plan.block_count > 0) {
    constexpr int kSegmentThreads = 128;
    const auto segment_blocks =
        static_cast<unsigned>((plan.segment_count + kSegmentThreads - 1) / kSegmentThreads);
    lamb_step_sizes_kernel<<<segment_blocks, kSegmentThreads, 0, stream_>>>(plan.view, plan.segment_count,
                                                                            lr);
    lamb_stage2_kernel<<<static_cast<unsigned>(plan.block_count), kThreads, 0, stream_>>>(buffers, plan.view,
                                                                                          scaling, constants);
  }
  check_launch("lamb_step");
}

void CudaBackend::sgd_step(loom::OptimizerPlan& plan_ref, const loom::Tensor& params,
                           const loom::Tensor& grads, const loom::Tensor& momentum_buffer,
                           const loom::GradientScaling& scaling, const loom::SgdConstants& constants,
                           double lr) {
  const auto check = checks("sgd_step");
  CudaOptimizerPlan& plan = cuda_plan(plan_ref);
  loom_backend::check_sgd_buffers(check, plan.total_elements, params, grads, momentum_buffer, plan.working);
  const bool momentum = momentum_buffer.defined();
  begin_update(check, plan, scaling, lr);
  float* w = floats(params);
  const float* g = floats(grads);
  float* buffer = momentum ? floats(momentum_buffer) : nullptr;
  const auto f32_lr = static_cast<float>(lr);
  const unsigned blocks = update_blocks(plan);
  if (!momentum)
    sgd_update_kernel<false, false>
        <<<blocks, kThreads, 0, stream_>>>(w, g, buffer, plan.view, scaling, constants, f32_lr);
  else if (constants.nesterov != 0)
    sgd_update_kernel<true, true>
        <<<blocks, kThreads, 0, stream_>>>(w, g, buffer, plan.view, scaling, constants, f32_lr);
  else
    sgd_update_kernel<true, false>
        <<<blocks, kThreads, 0, stream_>>>(w, g, buffer, plan.view, scaling, constants, f32_lr);
  check_launch("sgd_step");
}

void CudaBackend::set_working_copy(loom::OptimizerPlan& plan_ref, const loom::Tensor& working) {
  const auto check = checks("set_working_copy");
  CudaOptimizerPlan& plan = cuda_plan(plan_ref);
  loom_backend::check_working_copy(check, working, plan.total_elements);
  plan.working = working.defined() ? working : loom::Tensor{};
  plan.view.working = {plan.working.data, working.defined() ? working.dtype : loom::DType::bf16};
}

loom::OptimizerStepReport CudaBackend::read_report(const loom::OptimizerPlan& plan_ref) {
  const auto& plan = static_cast<const CudaOptimizerPlan&>(plan_ref);
  StepScalars scalars{};
  copy_to_host(&scalars, plan.view.scalars, sizeof scalars);
  return {scalars.grad_norm, scalars.clip_divisor};
}

}  // namespace loom_cuda
