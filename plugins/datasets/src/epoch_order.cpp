// EpochOrder; see epoch_order.hpp.
#include "epoch_order.hpp"

#include <algorithm>
#include <numeric>
#include <utility>

namespace loom_datasets {

uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t StreamRandom::below(uint64_t n) {
  if (n <= 1) return 0;
  for (;;) {
    const unsigned __int128 product = static_cast<unsigned __int128>(next()) * n;
    const auto low = static_cast<uint64_t>(product);
    if (low >= (0 - n) % n) return static_cast<uint64_t>(product >> 64);
  }
}

namespace {
template <typename T>
void fisher_yates(std::vector<T>& items, StreamRandom& random) {
  for (size_t i = items.size(); i-- > 1;) std::swap(items[i], items[random.below(i + 1)]);
}
}  // namespace

uint64_t RankSlicing::rows_of(uint64_t global_rows) const {
  const uint64_t before = static_cast<uint64_t>(rank) * batch_size;
  return global_rows <= before ? 0 : std::min(batch_size, global_rows - before);
}

std::vector<uint64_t> rank_order(const std::vector<uint64_t>& group_sizes, bool shuffle, uint64_t seed,
                                 uint64_t epoch, uint64_t start, uint64_t end, const RankSlicing& slicing) {
  std::vector<uint64_t> starts(group_sizes.size(), 0);
  uint64_t total = 0;
  for (size_t g = 0; g < group_sizes.size(); ++g) starts[g] = total, total += group_sizes[g];
  end = std::min(end, total);
  const uint64_t global_batch = static_cast<uint64_t>(slicing.world) * slicing.batch_size;
  const uint64_t first_block = static_cast<uint64_t>(slicing.rank) * slicing.batch_size;
  // Position p belongs to this rank when its offset inside its global batch lies in the rank's block.
  auto mine = [&](uint64_t p) {
    const uint64_t offset = (p - start) % global_batch;
    return offset >= first_block && offset < first_block + slicing.batch_size;
  };
  std::vector<uint64_t> out;
  StreamRandom random(mix64(seed) ^ mix64(epoch + 0x5851f42d4c957f2dull));
  std::vector<size_t> groups(group_sizes.size());
  std::iota(groups.begin(), groups.end(), size_t{0});
  if (shuffle) fisher_yates(groups, random);
  uint64_t position = 0;  // position in the whole epoch sequence
  std::vector<uint64_t> members;
  for (size_t g : groups) {
    const uint64_t size = group_sizes[g];
    // Every group is shuffled (the generator's stream must not depend on start/end); only the
    // positions in [start, end) that are this rank's are kept.
    members.resize(size);
    std::iota(members.begin(), members.end(), starts[g]);
    if (shuffle) fisher_yates(members, random);
    for (uint64_t i = 0; i < size; ++i) {
      const uint64_t p = position + i;
      if (p >= start && p < end && mine(p)) out.push_back(members[i]);
    }
    position += size;
  }
  return out;
}

uint64_t rank_share(uint64_t total, const RankSlicing& slicing, bool drop_last) {
  const uint64_t global_batch = static_cast<uint64_t>(slicing.world) * slicing.batch_size;
  const uint64_t full = total / global_batch;
  return full * slicing.batch_size + (drop_last ? 0 : slicing.rows_of(total % global_batch));
}

}  // namespace loom_datasets
