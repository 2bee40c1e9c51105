// SavedAttentionBytes: how much of a block's `saved` activation bytes (block.hpp,
// ActivationBytes::saved) its attention keeps from forward to backward — a named interface a block
// may offer (interfaces.hpp), so the host's account of device memory (`loom bench`,
// host/train/memory_account.hpp) can show attention's share, the part that grows with T² on the
// unfused path. A block that does not offer it counts all its saved bytes as other activations.
#pragma once

#include <cstddef>

#include "loom/sdk/block.hpp"
#include "loom/sdk/version.hpp"

LOOM_SDK_NAMESPACE_BEGIN

class SavedAttentionBytes {
 public:
  static constexpr const char* kInterfaceName = "loom.block.saved_attention_bytes";
  static constexpr uint32_t kInterfaceVersion = 1;

  /// Of activation_bytes(shape).saved, the bytes attention keeps for its backward (for BERT's
  /// encoder layer: q, k, v, the softmax statistics or probabilities, and the context).
  virtual size_t saved_attention_bytes(const ActivationShape& shape) const = 0;

 protected:
  ~SavedAttentionBytes() = default;
};

LOOM_SDK_NAMESPACE_END
