// OpProfiler: where a step's time goes, op family by op family, measured by the backend that runs
// the ops (a named interface, interfaces.hpp). `loom bench --profile` switches it on, reads the
// totals after each step and prints time, calls and share of the step per family.
//
// What a backend measures: the time of each op it is asked for, from where the op's first work
// starts to where its last work ends, summed per family.
// - A CPU backend times each op's call on the calling thread (wall time; the ops are synchronous).
// - A GPU backend records a pair of timing events on its stream around each op and reads the
//   elapsed times when the totals are taken: no op waits for the device, so timing does not
//   serialise the step, and an op's time is device time (queueing on the host is not in it).
// - An op that a backend runs through another of its ops (a zero through fill, a GEMM's scaling)
//   counts once, in the family of the op the caller called.
// - Off, the backend times nothing and the ops cost what they cost without this interface.
//
// The families (OpFamily) group the Backend ops of backend.hpp and the op families of ops/*.hpp:
//   gemm                gemm
//   attention_forward   FusedAttention::attention_forward, softmax_forward, additive_key_mask
//                       (the unfused path's own ops; its GEMMs are gemm)
//   attention_backward  FusedAttention::attention_backward, softmax_backward
//   normalization       layernorm_forward/backward, ResidualLayerNorm's forward/backward
//   elementwise         fill, zero, copy, cast, bias_add, bias_grad, bias_gelu_forward/backward,
//                       tanh_forward/backward, add, axpby, dropout_forward/backward
//   embedding           embedding_gather, embedding_scatter_add
//   loss                cross_entropy
//   optimizer           OptimizerSteps' passes (gradient_norm, adamw_step, lamb_step, sgd_step,
//                       create_plan), OptimizerWorkingCopy's set_working_copy, sum_squares,
//                       global_norm, check_finite
//   upload              copy_from_host
//   download            copy_to_host
//   other               anything else a backend times
// A new family is a new interface version; op_family_name gives each its report name.
#pragma once

#include <cstddef>
#include <cstdint>

#include "loom/sdk/version.hpp"

LOOM_SDK_NAMESPACE_BEGIN

/// An op family: the index of its totals in OpProfiler::take_op_profile.
enum class OpFamily : uint32_t {
  gemm = 0,
  attention_forward,
  attention_backward,
  normalization,
  elementwise,
  embedding,
  loss,
  optimizer,
  upload,
  download,
  other,
};
/// The number of families of this interface version.
inline constexpr size_t kOpFamilyCount = 11;

/// The family's name in reports ("gemm", "attention_forward", ...); "unknown" past the last.
inline const char* op_family_name(OpFamily family) {
  constexpr const char* kNames[kOpFamilyCount] = {"gemm",
                                                  "attention_forward",
                                                  "attention_backward",
                                                  "normalization",
                                                  "elementwise",
                                                  "embedding",
                                                  "loss",
                                                  "optimizer",
                                                  "upload",
                                                  "download",
                                                  "other"};
  const auto index = static_cast<size_t>(family);
  return index < kOpFamilyCount ? kNames[index] : "unknown";
}

/// One family's totals.
struct OpFamilyTime {
  double milliseconds;  ///< summed time of its ops
  uint64_t calls;       ///< ops called (nested ops not counted)
};

class OpProfiler {
 public:
  static constexpr const char* kInterfaceName = "loom.backend.op_profiler";
  static constexpr uint32_t kInterfaceVersion = 1;

  /// Starts (true) or stops (false) timing every op; off when the backend is created. Switch it
  /// between ops, not from inside one; the totals of ops already timed are kept.
  virtual void set_op_profiling(bool on) = 0;

  /// Writes the totals of the ops timed since the previous call into totals[0, count) — index i
  /// is OpFamily i — and starts new totals. Returns the number of families this backend knows
  /// (kOpFamilyCount of the SDK it was built with); entries past it are zeroed. A GPU backend
  /// waits here for the timed ops to finish: call it where the host waits for the device anyway
  /// (after synchronize(), at the end of a step).
  virtual size_t take_op_profile(OpFamilyTime* totals, size_t count) = 0;

 protected:
  ~OpProfiler() = default;
};

LOOM_SDK_NAMESPACE_END
