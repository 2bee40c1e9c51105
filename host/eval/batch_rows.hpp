// Where the rows of a batch come from, in the words of the dataset's files: a failure while a
// batch is evaluated (a label the model has no class for, a block refusing its input) names the
// file and line a user can open, not the block that noticed. Built from Dataset::describe_instance:
//   text classification {"file", "line"}   → "dev.tsv:14", or "dev.tsv lines 2-65" for a batch
//   pre-training shards {"file", "row"}    → "shard.hdf5 row 7", "shard.hdf5 rows 0-15"
//   SQuAD               {"qas_id", ...}    → "question id 56be4db0", "question ids a, b, ... (32)"
// A dataset that describes nothing gives "instances 0-31 of the dataset".
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "loom/sdk/dataset.hpp"

namespace loom::host {

/// The places of instances `ids` of `dataset` (one row, or a whole batch) as above.
std::string describe_rows(const loom::Dataset& dataset, std::span<const uint64_t> ids);

}  // namespace loom::host
