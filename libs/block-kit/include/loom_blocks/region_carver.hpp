// RegionCarver: hands out aligned tensors from one arena region, front to back.
//
// The same carving code sizes a block's needs (base = nullptr: only counts bytes) and later lays
// the tensors out in the region the host gives (base = the region: throws when it is too small).
// So `activation_bytes` and `forward`/`backward` can never disagree about the layout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "loom/sdk/backend.hpp"
#include "loom/sdk/error.hpp"
#include "loom/sdk/tensor.hpp"

namespace loom_blocks {

class RegionCarver {
 public:
  /// `base` nullptr: sizing only (tensors get null data).
  RegionCarver(void* base, size_t capacity, loom::Device device, const char* what)
      : base_(static_cast<char*>(base)), capacity_(capacity), device_(device), what_(what) {}

  /// A contiguous tensor of `shape` at the next kAlignment-aligned offset.
  loom::Tensor take(loom::DType dtype, std::initializer_list<int64_t> shape) {
    loom::Tensor t = loom::Tensor::contiguous(nullptr, dtype, shape, device_);
    const size_t start =
        (used_ + loom::Backend::kAlignment - 1) / loom::Backend::kAlignment * loom::Backend::kAlignment;
    used_ = start + t.nbytes();
    if (base_ != nullptr) {
      if (used_ > capacity_)
        throw loom::Error(std::string(what_) + ": arena region of " + std::to_string(capacity_) +
                          " bytes is too small (needs at least " + std::to_string(used_) + ")");
      t.data = base_ + start;
    }
    return t;
  }
  /// A GEMM-operand copy in the compute dtype: taken when `compute` is 16-bit, an absent view in
  /// f32 compute (where GEMMs read the f32 tensor itself).
  loom::Tensor take_compute_copy(loom::DType compute, std::initializer_list<int64_t> shape) {
    return compute != loom::DType::f32 ? take(compute, shape) : loom::Tensor{};
  }

  /// Bytes handed out so far (with alignment).
  size_t used() const { return used_; }

 private:
  char* base_;
  size_t capacity_;
  size_t used_ = 0;
  loom::Device device_;
  const char* what_;
};

}  // namespace loom_blocks
