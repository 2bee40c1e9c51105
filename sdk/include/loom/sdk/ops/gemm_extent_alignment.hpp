// GemmExtentAlignment: the multiple that a backend's GEMMs want along their extents (a named
// interface, interfaces.hpp). A GEMM kernel loads its operands in vectors of up to 16 bytes along
// their contiguous dimension; an extent that is not a multiple of the vector length (the MLM
// decoder's vocabulary of 30,522) leaves the library kernels that load two elements at a time.
// A block that can split such a GEMM into an aligned part and a small remainder asks here whether
// it is worth it. A backend that does not offer the interface wants no multiple (as 1).
#pragma once

#include <cstdint>

#include "loom/sdk/tensor.hpp"
#include "loom/sdk/version.hpp"

LOOM_SDK_NAMESPACE_BEGIN

class GemmExtentAlignment {
 public:
  static constexpr const char* kInterfaceName = "loom.backend.gemm_extent_alignment";
  static constexpr uint32_t kInterfaceVersion = 1;

  /// The multiple, in elements (≥ 1), that M, N and K of a Backend::gemm with operands of
  /// `operand` dtype should be for the backend's fastest kernels; 1 when it has no preference
  /// for that dtype. A hint only: gemm takes every extent either way.
  virtual int64_t gemm_extent_multiple(DType operand) const = 0;

 protected:
  ~GemmExtentAlignment() = default;
};

LOOM_SDK_NAMESPACE_END
