// GradientSync: averaging the flat gradient buffer over the ranks of a data-parallel run.
//
// Two modes ([train] allreduce_post_accumulation):
// - overlapped (default): during the last micro-batch's backward, `grads_final_from(first)`
//   reports that elements [first, total) are complete; whenever at least `bucket_elements` of
//   them wait, they go out as one non-blocking all-reduce while backward goes on, and the
//   backward hook drives the progress of those in flight. `finish()` sends the rest and waits.
//   Needs a communicator that offers ExtendedCollectives; without it, it falls back to:
// - post-accumulation: `finish()` all-reduces the whole buffer once after backward (as NVIDIA's
//   reference does with allreduce_post_accumulation).
// Every rank issues the same buckets in the same order (the offsets come from the model's block
// layout), which matched collectives require.
#pragma once

#include <cstddef>
#include <deque>

#include "loom/sdk/communicator.hpp"
#include "loom/sdk/extended_collectives.hpp"
#include "plugin_loading/component.hpp"

namespace loom::host {

struct GradientSyncOptions {
  bool overlap = true;
  size_t bucket_elements = 25u << 18;  ///< 25 MiB of f32
};

/// What `loom run` and `loom bench` ask for: buckets of `bucket_mb` MiB overlapping backward unless
/// [train] allreduce_post_accumulation, or unless the gradients are a host copy of device memory
/// (host_mirror.hpp), which is complete only once backward has ended.
GradientSyncOptions gradient_sync_options(bool post_accumulation, double bucket_mb, bool grads_are_a_copy);

class GradientSync {
 public:
  GradientSync(const Component<loom::Communicator>& communicator, float* grads, size_t total,
               GradientSyncOptions options);

  /// True when buckets overlap backward (overlap requested and the communicator can).
  bool overlapping() const { return collectives_ != nullptr && options_.overlap; }
  /// Overlapped mode: gradient elements [first, total) are final (the model's backward hook).
  void grads_final_from(size_t first);
  /// Completes the mean over ranks of the whole buffer.
  void finish();
  /// Seconds the caller spent blocked in `finish()` since the last call (communication that
  /// backward did not hide).
  double take_blocked_seconds();

 private:
  void start_bucket(size_t first, size_t end);

  const Component<loom::Communicator>& communicator_;
  loom::ExtendedCollectives* collectives_;  // nullptr when the communicator does not offer them
  float* grads_;
  size_t total_;
  GradientSyncOptions options_;
  size_t unsent_end_;  // elements [unsent_end_, total_) are in flight or done
  std::deque<loom::CollectiveHandle> in_flight_;
  double blocked_seconds_ = 0;
};

}  // namespace loom::host
