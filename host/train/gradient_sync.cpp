// GradientSync; see gradient_sync.hpp.
#include "train/gradient_sync.hpp"

#include <chrono>

namespace loom::host {

GradientSyncOptions gradient_sync_options(bool post_accumulation, double bucket_mb, bool grads_are_a_copy) {
  return {!post_accumulation && !grads_are_a_copy,
          static_cast<size_t>(bucket_mb * (1 << 20) / sizeof(float))};
}

GradientSync::GradientSync(const Component<loom::Communicator>& communicator, float* grads, size_t total,
                           GradientSyncOptions options)
    : communicator_(communicator),
      collectives_(communicator.find<loom::ExtendedCollectives>()),
      grads_(grads),
      total_(total),
      options_(options),
      unsent_end_(total) {
  if (options_.bucket_elements == 0) options_.bucket_elements = 1;
}

void GradientSync::start_bucket(size_t first, size_t end) {
  communicator_.call([&](loom::Communicator&) {
    in_flight_.push_back(
        collectives_->start_all_reduce(grads_ + first, end - first, loom::DType::f32, loom::ReduceOp::mean));
  });
  unsent_end_ = first;
}

void GradientSync::grads_final_from(size_t first) {
  if (!overlapping()) return;
  if (unsent_end_ > first && unsent_end_ - first >= options_.bucket_elements)
    start_bucket(first, unsent_end_);
  // Collectives progress only inside MPI calls: poll the oldest between blocks of backward.
  communicator_.call([&](loom::Communicator&) {
    while (!in_flight_.empty() && collectives_->test(in_flight_.front())) in_flight_.pop_front();
  });
}

void GradientSync::finish() {
  const auto start = std::chrono::steady_clock::now();
  if (overlapping()) {
    if (unsent_end_ > 0) start_bucket(0, unsent_end_);
    communicator_.call([&](loom::Communicator&) {
      for (; !in_flight_.empty(); in_flight_.pop_front()) collectives_->wait(in_flight_.front());
    });
    unsent_end_ = total_;
  } else {
    communicator_.call([&](loom::Communicator& c) { c.all_reduce_mean(grads_, total_); });
  }
  blocked_seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

double GradientSync::take_blocked_seconds() {
  const double seconds = blocked_seconds_;
  blocked_seconds_ = 0;
  return seconds;
}

}  // namespace loom::host
