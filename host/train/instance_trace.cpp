// The instance trace of a data-parallel test; see instance_trace.hpp.
#include "train/instance_trace.hpp"

#include <cstdlib>
#include <filesystem>

#include <fmt/format.h>

namespace loom::host {

InstanceTrace::InstanceTrace(int rank) {
  const char* dir = std::getenv("LOOM_TRACE_INSTANCES");
  if (dir != nullptr && *dir != '\0')
    file_ = std::make_unique<std::ofstream>(std::filesystem::path(dir) / fmt::format("rank-{}.txt", rank),
                                            std::ios::app);
}

void InstanceTrace::record(const loom::BatchShape& shape, const std::vector<uint64_t>& instance_ids) {
  if (!file_) return;
  for (int32_t r = 0; r < shape.rows; ++r)
    *file_ << shape.epoch << ' ' << instance_ids[static_cast<size_t>(r)] << '\n';
}

}  // namespace loom::host
