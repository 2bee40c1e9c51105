// ParameterTable: where every model parameter lives in the flat fp32 buffers (docs/design.md §3).
//
// Each parameter has its full Hugging Face name, its PyTorch shape, an element offset into the
// flat master/gradient buffers (aligned to kParameterAlignment elements so every parameter starts
// on a 64-byte boundary), its initialiser and its weight-decay flag. Ties are aliases: a name that
// refers to another parameter's storage (`cls.predictions.decoder.weight` →
// `bert.embeddings.word_embeddings.weight`); they own no elements and are counted once.
// Elements between parameters (alignment gaps) belong to no segment and stay zero.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "loom/sdk/block.hpp"
#include "loom/sdk/optimizer.hpp"

namespace loom::host {

/// Elements every parameter's offset is a multiple of (16 floats = 64 bytes).
inline constexpr size_t kParameterAlignment = 16;

struct ParameterEntry {
  std::string name;            ///< full Hugging Face name
  std::vector<int64_t> shape;  ///< PyTorch shape
  size_t offset = 0;           ///< first element in the flat buffers
  size_t count = 0;            ///< elements
  loom::ParameterInit init = loom::ParameterInit::zeros;
  bool weight_decay = false;
  size_t block = 0;  ///< index of the block that declared it
};

/// A second name for an existing parameter's storage (a tied weight).
struct ParameterAlias {
  std::string name;    ///< the alias, e.g. "cls.predictions.decoder.weight"
  std::string target;  ///< the parameter it shares, e.g. "bert.embeddings.word_embeddings.weight"
};

class ParameterTable {
 public:
  /// Appends a parameter at the next aligned offset; throws std::invalid_argument on a duplicate
  /// name or a non-positive extent.
  const ParameterEntry& add(std::string name, std::vector<int64_t> shape, loom::ParameterInit init,
                            bool weight_decay, size_t block);
  /// Declares `name` as sharing `target`'s storage; `shape` must equal the target's. Throws
  /// std::invalid_argument naming both when the target is unknown or shapes differ.
  void add_alias(std::string name, std::string target, const std::vector<int64_t>& shape);

  /// Parameters in declaration order.
  const std::vector<ParameterEntry>& entries() const { return entries_; }
  /// Aliases in declaration order.
  const std::vector<ParameterAlias>& aliases() const { return aliases_; }
  /// The parameter called `name`, following an alias to its target; nullptr when unknown.
  const ParameterEntry* find(const std::string& name) const;

  /// Floats each flat buffer holds (offset + count of the last parameter, aligned).
  size_t total_elements() const { return total_; }
  /// Sum of the parameters' element counts (ties counted once): the model's parameter count.
  size_t parameter_count() const;
  /// The segment table for optimizers; names point into this table (valid while it lives).
  /// `frozen`: name prefixes ([train] freeze) whose parameters get no segment, so the optimizer
  /// leaves them as they are (optimizer.hpp: elements outside every segment are not touched).
  /// Throws std::invalid_argument when a prefix names no parameter or nothing is left to train.
  std::vector<loom::ParameterSegment> segments(const std::vector<std::string>& frozen = {}) const;

 private:
  std::vector<ParameterEntry> entries_;
  std::vector<ParameterAlias> aliases_;
  size_t total_ = 0;
};

}  // namespace loom::host
