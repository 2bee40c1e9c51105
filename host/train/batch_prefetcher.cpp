// Batches read ahead on a thread of their own; see batch_prefetcher.hpp.
#include "train/batch_prefetcher.hpp"

#include <stdexcept>

namespace loom::host {

BatchPrefetcher::BatchPrefetcher(const Component<loom::Dataset>& data, const loom::BatchLimits& limits,
                                 size_t depth)
    : data_(data) {
  if (depth == 0) throw std::invalid_argument("BatchPrefetcher: depth must be at least 1");
  for (size_t i = 0; i < depth + 1; ++i) slots_.push_back(std::make_unique<Slot>(limits));
  cursor_ = data_.call([](loom::Dataset& d) { return d.cursor(); });
  thread_ = std::thread([this] { read_ahead(); });
}

BatchPrefetcher::~BatchPrefetcher() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void BatchPrefetcher::read_ahead() {
  std::unique_lock lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] { return stop_ || (!failed_ && holds_ == 0 && slots_in_use() < slots_.size()); });
    if (stop_) return;
    Slot& slot = *slots_[read_ % slots_.size()];
    reading_ = true;
    lock.unlock();
    // The buffers of this slot are the thread's alone until `read_` counts it.
    slot.error = nullptr;
    try {
      data_.call([&](loom::Dataset& d) {
        slot.batch = slot.buffers.next(d, slot.shape);
        slot.after = d.cursor();
      });
    } catch (...) {
      slot.error = std::current_exception();
    }
    lock.lock();
    reading_ = false;
    failed_ = slot.error != nullptr;
    ++read_;
    changed_.notify_all();
  }
}

PrefetchedBatch BatchPrefetcher::take() {
  std::unique_lock lock(mutex_);
  // Either would wait for ever: nothing is read under a hold, or after the dataset failed.
  if (read_ == taken_ && (holds_ > 0 || failed_))
    throw std::logic_error(holds_ > 0 ? "BatchPrefetcher::take under a hold"
                                      : "BatchPrefetcher::take after the dataset failed");
  changed_.wait(lock, [&] { return read_ > taken_; });
  Slot& slot = *slots_[taken_ % slots_.size()];
  ++taken_;  // frees the slot of the batch taken before
  changed_.notify_all();
  if (slot.error) std::rethrow_exception(slot.error);
  cursor_ = slot.after;
  return {slot.batch, slot.shape, &slot.buffers.instance_ids()};
}

loom::DatasetCursor BatchPrefetcher::cursor() const {
  std::lock_guard lock(mutex_);
  return cursor_;
}

BatchPrefetcher::Hold BatchPrefetcher::hold() {
  std::unique_lock lock(mutex_);
  ++holds_;
  changed_.wait(lock, [&] { return !reading_; });
  return Hold(this);
}

BatchPrefetcher::Hold::~Hold() {
  if (owner_ == nullptr) return;
  {
    std::lock_guard lock(owner_->mutex_);
    --owner_->holds_;
  }
  owner_->changed_.notify_all();
}

}  // namespace loom::host
