// BackwardInput: whether a block's backward reads the `input` its forward saw — a named interface a
// block may offer (interfaces.hpp). By the block contract (block.hpp) the host keeps every block's
// input unchanged until that block's backward. A block whose backward does not read it (BERT's
// encoder layer in 16-bit compute keeps its own 16-bit copy of x; the pooler heads keep the rows
// they use) lets the host reuse that memory as soon as the block's forward has returned: the f32
// hidden states between such blocks then take two buffers used in turn instead of one per block
// boundary. A block that does not offer this keeps its input for its backward, as before.
#pragma once

#include "loom/sdk/block.hpp"
#include "loom/sdk/version.hpp"

LOOM_SDK_NAMESPACE_BEGIN

class BackwardInput {
 public:
  static constexpr const char* kInterfaceName = "loom.block.backward_input";
  static constexpr uint32_t kInterfaceVersion = 1;

  /// After setup: true when backward reads `input` (or a view of it kept from forward); false when
  /// the memory behind `input` may change between this block's forward and its backward.
  virtual bool backward_reads_input() const = 0;

 protected:
  ~BackwardInput() = default;
};

LOOM_SDK_NAMESPACE_END
