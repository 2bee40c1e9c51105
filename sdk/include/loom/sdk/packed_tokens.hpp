// PackedTokens: a layer block that runs over real tokens only — a named interface a block may
// offer (interfaces.hpp). Added in SDK 0.5 (ABI minor 5).
//
// When the run is unpadded (the recipe's `[model] unpadded`), the host hands a block that accepts
// packed tokens the packed view of each batch with padding (BatchView, block.hpp: `sequences` > 0,
// hidden [1, N, H] of the N real tokens) and converts the hidden stream at the boundaries to
// blocks that do not (the embeddings, the heads, any block built against an earlier SDK): it
// gathers the real rows on the way in and scatters them back, zeros at padding, on the way out, in
// forward and backward alike. A block that accepts them must:
// - compute each real token exactly as the padded batch would (attention within its sequence,
//   positions from BatchView::token_positions), so losses and gradients equal the padded run's up
//   to summation order;
// - fit a packed batch of N ≤ B·T tokens in the arena `activation_bytes({B, T, ...})` asked for.
// Dropout keys its elements by their place in the layout it runs, so the masks of a packed and a
// padded run differ (each is a valid draw); with dropout off the two runs agree.
#pragma once

#include <cstdint>

#include "loom/sdk/version.hpp"

LOOM_SDK_NAMESPACE_BEGIN

class PackedTokens {
 public:
  static constexpr const char* kInterfaceName = "loom.block.packed_tokens";
  static constexpr uint32_t kInterfaceVersion = 1;

  /// After setup: true when forward and backward take the packed view on this block's backend
  /// (asked once; false, or not offering the interface, means padded batches only).
  virtual bool accepts_packed_tokens() const = 0;

 protected:
  ~PackedTokens() = default;
};

LOOM_SDK_NAMESPACE_END
