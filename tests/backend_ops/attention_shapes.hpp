// What the attention families' cases share: a problem's shape, the per-head view of an encoder
// activation, and a padding mask with a different length per batch row.
#pragma once

#include <algorithm>
#include <sstream>
#include <string>
#include <vector>

#include "backend_op_case.hpp"

namespace loom_backend_ops {

struct Shape {
  int64_t B, H, T, d;
  int64_t numel() const { return B * T * H * d; }
  std::vector<int64_t> activation() const { return {B, T, H, d}; }  // the encoder's [B·T, H·d]
  std::string name() const {
    std::ostringstream out;  // not string +: GCC 12's -Wrestrict false positive (its bug 105329)
    out << "B" << B << " H" << H << " T" << T << " d" << d;
    return out.str();
  }
};

/// The [B, H, T, d] per-head view of a [B, T, H, d] activation (how the encoder layer calls the op).
inline loom::Tensor heads(const loom::Tensor& activation) {
  return activation.permute({0, 2, 1, 3});
}

/// A padding mask: batch row b keeps its first T − 2b keys (at least one).
inline HostTensor padding_mask(const Shape& n) {
  std::vector<float> mask(static_cast<size_t>(n.B * n.T), 0.0f);
  for (int64_t b = 0; b < n.B; ++b)
    for (int64_t t = std::max<int64_t>(1, n.T - 2 * b); t < n.T; ++t) mask[b * n.T + t] = loom::kMaskedKey;
  return HostTensor::of(mask, loom::DType::f32, {n.B, n.T});
}

}  // namespace loom_backend_ops
