// The instance trace of a data-parallel test; see instance_trace.hpp.
#include "train/instance_trace.hpp"

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>

namespace loom::host {

InstanceTrace::InstanceTrace(int rank) {
  const char* dir = std::getenv("LOOM_TRACE_INSTANCES");
  if (dir == nullptr || *dir == '\0') return;
  path_ = std::filesystem::path(dir) / fmt::format("rank-{}.txt", rank);
  file_ = std::make_unique<std::ofstream>(path_, std::ios::app);
  if (!*file_)
    throw std::runtime_error(path_.string() + ": cannot be opened for appending (LOOM_TRACE_INSTANCES)");
}

void InstanceTrace::record(const loom::BatchShape& shape, const std::vector<uint64_t>& instance_ids) {
  if (!file_) return;
  for (int32_t r = 0; r < shape.rows; ++r)
    *file_ << shape.epoch << ' ' << instance_ids[static_cast<size_t>(r)] << '\n';
  // Flushed per batch and checked: a test reading a trace that silently lost lines would blame
  // the data-parallel split.
  if (!file_->flush()) throw std::runtime_error(path_.string() + ": write failed (LOOM_TRACE_INSTANCES)");
}

}  // namespace loom::host
