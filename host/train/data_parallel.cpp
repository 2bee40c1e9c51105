// Data-parallel collectives; see data_parallel.hpp.
#include "train/data_parallel.hpp"

#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "loom/sdk/extended_collectives.hpp"

namespace loom::host {

uint64_t parameter_checksum(const float* values, size_t count) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(values);
  uint64_t hash = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < count * sizeof(float); ++i) hash = (hash ^ bytes[i]) * 0x100000001b3ull;
  return hash;
}

void broadcast_parameters(const RankGroup& group, float* values, size_t count) {
  if (group.world <= 1) return;
  group.communicator.call([&](loom::Communicator& c) { c.broadcast(values, count * sizeof(float), 0); });
  const uint64_t mine = parameter_checksum(values, count);
  std::vector<int> differing;
  if (auto* collectives = group.communicator.find<loom::ExtendedCollectives>()) {
    std::vector<uint64_t> all(static_cast<size_t>(group.world));
    group.communicator.call(
        [&](loom::Communicator&) { collectives->all_gather(&mine, sizeof(mine), all.data()); });
    for (int r = 1; r < group.world; ++r)
      if (all[static_cast<size_t>(r)] != all[0]) differing.push_back(r);
  } else {
    uint64_t leader = mine;
    group.communicator.call([&](loom::Communicator& c) { c.broadcast(&leader, sizeof(leader), 0); });
    if (!any_rank(group, leader != mine)) return;
    differing.push_back(-1);
  }
  if (differing.empty()) return;
  std::string who =
      differing.front() < 0 ? "some rank" : fmt::format("rank(s) {}", fmt::join(differing, ", "));
  throw std::runtime_error(
      fmt::format("the parameters of {} differ from rank 0's after the broadcast (checksum mismatch): the "
                  "communicator corrupted data; check the MPI/NCCL installation",
                  who));
}

void sum_over_ranks(const RankGroup& group, std::vector<double>& values) {
  if (group.world <= 1) return;
  std::vector<float> carried(values.begin(), values.end());
  group.communicator.call([&](loom::Communicator& c) { c.all_reduce_sum(carried.data(), carried.size()); });
  for (size_t i = 0; i < values.size(); ++i) values[i] = carried[i];
}

bool any_rank(const RankGroup& group, bool flag) {
  if (group.world <= 1) return flag;
  float count = flag ? 1.0f : 0.0f;
  group.communicator.call([&](loom::Communicator& c) { c.all_reduce_sum(&count, 1); });
  return count > 0;
}

nlohmann::json per_rank_throughput(const RankGroup& group, double step_ms, double sequences_per_second) {
  const double mine[2] = {step_ms, sequences_per_second};
  std::vector<double> all(mine, mine + 2);
  int first_rank = group.rank;
  auto* collectives = group.communicator.find<loom::ExtendedCollectives>();
  if (group.world > 1 && collectives != nullptr) {
    all.assign(2 * static_cast<size_t>(group.world), 0.0);
    group.communicator.call(
        [&](loom::Communicator&) { collectives->all_gather(mine, sizeof(mine), all.data()); });
    first_rank = 0;
  }
  nlohmann::json ranks = nlohmann::json::array();
  for (size_t i = 0; i + 1 < all.size(); i += 2)
    ranks.push_back({{"rank", first_rank + static_cast<int>(i / 2)},
                     {"step_ms", all[i]},
                     {"sequences_per_second", all[i + 1]}});
  return ranks;
}

}  // namespace loom::host
