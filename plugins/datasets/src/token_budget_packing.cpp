// TokenBudgetPacking; see token_budget_packing.hpp.
#include "token_budget_packing.hpp"

#include <algorithm>
#include <numeric>
#include <set>
#include <utility>

namespace loom_datasets {

std::vector<TokenBin> pack_by_token_budget(const std::vector<uint32_t>& lengths, uint64_t budget,
                                           uint32_t max_rows) {
  std::vector<uint32_t> by_length(lengths.size());
  std::iota(by_length.begin(), by_length.end(), uint32_t{0});
  std::stable_sort(by_length.begin(), by_length.end(),
                   [&](uint32_t a, uint32_t b) { return lengths[a] > lengths[b]; });
  std::vector<TokenBin> bins;
  // Open bins keyed by (budget left, bin index): the first entry not below (length, 0) is the
  // best fit, and among equally full bins the one opened first. Full bins leave the set.
  std::set<std::pair<uint64_t, size_t>> open;
  for (const uint32_t index : by_length) {
    const uint64_t length = lengths[index];
    const auto best = open.lower_bound({length, 0});
    size_t bin = bins.size();
    uint64_t left = 0;
    if (length <= budget && best != open.end()) {
      bin = best->second;
      left = best->first - length;
      open.erase(best);
    } else {
      bins.emplace_back();
      left = length <= budget ? budget - length : 0;  // an oversize sequence fills its bin
    }
    bins[bin].push_back(index);
    if (bins[bin].size() < max_rows && length <= budget) open.insert({left, bin});
  }
  for (TokenBin& bin : bins) std::sort(bin.begin(), bin.end());
  std::sort(bins.begin(), bins.end(),
            [](const TokenBin& a, const TokenBin& b) { return a.front() < b.front(); });
  return bins;
}

}  // namespace loom_datasets
