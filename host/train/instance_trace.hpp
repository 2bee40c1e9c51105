// InstanceTrace: with LOOM_TRACE_INSTANCES=DIR, every rank appends the instances it trains on to
// DIR/rank-N.txt, one "epoch id" line each, so a test can check that data parallelism reads each
// instance exactly once per epoch. Without the variable it holds nothing and records nothing.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <vector>

#include "loom/sdk/dataset.hpp"

namespace loom::host {

class InstanceTrace {
 public:
  /// Opens DIR/rank-`rank`.txt for appending when LOOM_TRACE_INSTANCES=DIR is set.
  explicit InstanceTrace(int rank);

  /// Lists the first `shape.rows` of `instance_ids` (the batch's instances) under `shape.epoch`.
  void record(const loom::BatchShape& shape, const std::vector<uint64_t>& instance_ids);

 private:
  std::filesystem::path path_;
  std::unique_ptr<std::ofstream> file_;
};

}  // namespace loom::host
