// communicator/local: one process, rank 0 of 1.
#pragma once

#include "loom/sdk/communicator.hpp"
#include "loom/sdk/plugin.hpp"

namespace loom_local {

class LocalCommunicator final : public loom::Communicator {
 public:
  explicit LocalCommunicator(loom::ComponentContext& context);
  int rank() const override;
  int size() const override;
  void all_reduce_sum(float* data, size_t count) override;
  void all_reduce_mean(float* data, size_t count) override;
  void broadcast(void* data, size_t bytes, int root) override;
  void barrier() override;
};

}  // namespace loom_local
