// HiddenCopy: the compute-dtype copy of the hidden states between two blocks, made once — a named
// interface a block may offer (interfaces.hpp). In 16-bit compute a layer's first GEMMs read its
// input in the compute dtype, which it would cast from the f32 hidden states: a pass that reads
// them again. The block before it can store that copy as it writes its output (BERT's encoder
// layer: from the registers its add & norm stores the output from). The host pairs neighbouring
// blocks where the earlier one writes and the later one reads such a copy, keeps each copy from
// the earlier block's forward until the later block's backward, and counts it with the block
// outputs; the later block then keeps no copy of its own in its saved bytes.
#pragma once

#include "loom/sdk/block.hpp"
#include "loom/sdk/version.hpp"

LOOM_SDK_NAMESPACE_BEGIN

class HiddenCopy {
 public:
  static constexpr const char* kInterfaceName = "loom.block.hidden_copy";
  static constexpr uint32_t kInterfaceVersion = 1;

  /// After setup: whether forward can also write its output's copy in the compute dtype.
  virtual bool writes_output_copy() const = 0;
  /// After setup: whether forward (and backward) can read its input's copy instead of making one.
  virtual bool reads_input_copy() const = 0;
  /// Once, after setup and before activation_bytes: whether this block gets its input's copy and
  /// is asked for its output's from now on (each only where the block said it can).
  virtual void use_hidden_copies(bool input_copy, bool output_copy) = 0;
  /// Before each forward, where use_hidden_copies said so: the copies, compute dtype [B, T, H]
  /// contiguous on the backend's device (absent where not used). The input copy holds the earlier
  /// block's output, rounded once, and stays unchanged until this block's backward has returned;
  /// the output copy is this forward's to write (OVERWRITE).
  virtual void set_hidden_copies(const Tensor& input_copy, const Tensor& output_copy) = 0;

 protected:
  ~HiddenCopy() = default;
};

LOOM_SDK_NAMESPACE_END
