// Dynamic masking; see dynamic_masking.hpp.
#include "dynamic_masking.hpp"

#include "epoch_order.hpp"

namespace loom_datasets {

void apply_dynamic_masking(Row& row, const DynamicMasking& masking, uint64_t seed, uint64_t epoch,
                           uint64_t instance) {
  for (size_t p = 0; p < row.positions.size(); ++p)
    row.ids[static_cast<size_t>(row.positions[p])] = row.masked_ids[p];
  row.positions.clear();
  row.masked_ids.clear();
  StreamRandom random(mix64(seed ^ 0xd1b54a32d192ed03ull) ^ mix64(epoch * 0x9e3779b97f4a7c15ull + instance));
  const double not_mask = 1.0 - masking.mask_ratio;
  const double random_given_not_mask = not_mask > 0 ? masking.random_ratio / not_mask : 0.0;
  for (size_t i = 0; i < row.ids.size(); ++i) {
    const int32_t id = row.ids[i];
    if (id == masking.cls || id == masking.sep || id == masking.pad) continue;
    if (random.uniform() >= masking.masked_lm_prob) continue;
    row.positions.push_back(static_cast<int32_t>(i));
    row.masked_ids.push_back(id);
    if (random.uniform() < masking.mask_ratio)
      row.ids[i] = masking.mask;
    else if (random.uniform() < random_given_not_mask)
      row.ids[i] = static_cast<int32_t>(random.below(static_cast<uint64_t>(masking.vocab_size)));
  }
}

}  // namespace loom_datasets
