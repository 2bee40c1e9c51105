// EpochOrder; see epoch_order.hpp.
#include "epoch_order.hpp"

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

std::vector<uint64_t> rank_order(const std::vector<uint64_t>& group_sizes, bool shuffle, uint64_t seed,
                                 uint64_t epoch, int32_t rank, int32_t world) {
  std::vector<uint64_t> starts(group_sizes.size(), 0);
  uint64_t total = 0;
  for (size_t g = 0; g < group_sizes.size(); ++g) starts[g] = total, total += group_sizes[g];
  std::vector<uint64_t> out;
  out.reserve(rank_share(total, rank, world));
  StreamRandom random(mix64(seed) ^ mix64(epoch + 0x5851f42d4c957f2dull));
  std::vector<size_t> groups(group_sizes.size());
  std::iota(groups.begin(), groups.end(), size_t{0});
  if (shuffle) fisher_yates(groups, random);
  uint64_t position = 0;  // position in the whole epoch sequence
  std::vector<uint64_t> members;
  for (size_t g : groups) {
    const uint64_t size = group_sizes[g];
    // This rank's positions inside [position, position + size).
    const uint64_t first = position % static_cast<uint64_t>(world);
    const uint64_t skip = (static_cast<uint64_t>(rank) + world - first) % static_cast<uint64_t>(world);
    members.resize(size);
    std::iota(members.begin(), members.end(), starts[g]);
    if (shuffle) fisher_yates(members, random);
    for (uint64_t i = skip; i < size; i += static_cast<uint64_t>(world)) out.push_back(members[i]);
    position += size;
  }
  return out;
}

uint64_t rank_share(uint64_t total, int32_t rank, int32_t world) {
  const auto w = static_cast<uint64_t>(world);
  const auto r = static_cast<uint64_t>(rank);
  return total / w + (r < total % w ? 1 : 0);
}

}  // namespace loom_datasets
