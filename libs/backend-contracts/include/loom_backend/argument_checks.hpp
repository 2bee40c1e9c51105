// Validation of the views a backend op receives, with messages that name the op and the argument.
//
// Every op checks its arguments before touching memory: a wrong shape is a clear loom::Error
// ("layernorm_forward: gamma is f32[23], expected [24]"), never a silent overrun. One class serves
// every backend; only the memory test depends on the backend's device, and its wording names that
// memory ("is not in CPU memory", "is not in the memory of CUDA device 0").
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>

#include "loom/sdk/error.hpp"
#include "loom/sdk/tensor.hpp"

namespace loom_backend {

using loom::DType;

class ArgumentChecks {
 public:
  /// Checks for `op` on a backend whose views live on `device`.
  ArgumentChecks(const char* op, loom::Device device) : op_(op), device_(device) {}

  /// Throws loom::Error "op: message".
  [[noreturn]] void fail(const std::string& message) const {
    throw loom::Error(std::string(op_) + ": " + message);
  }
  /// Throws unless `condition`.
  void require(bool condition, const std::string& message) const {
    if (!condition) fail(message);
  }
  /// `t` is present (or empty) and in this backend's memory, whatever its layout.
  void on_device(const char* name, const loom::Tensor& t) const {
    if (!t.defined() && t.numel() != 0) fail(std::string(name) + " is absent");
    if (device_.type == loom::DeviceType::cpu) {
      if (t.device.type != loom::DeviceType::cpu) fail(std::string(name) + " is not in CPU memory");
      return;
    }
    // An empty view moves no bytes, so where it claims to live does not matter on a GPU.
    if (t.numel() != 0 && t.device != device_)
      fail(std::string(name) + " " + t.describe() + " is not in the memory of CUDA device " +
           std::to_string(device_.index));
  }
  /// `t` is present, in this backend's memory, contiguous, with one of `dtypes`.
  void tensor(const char* name, const loom::Tensor& t, std::initializer_list<loom::DType> dtypes) const {
    on_device(name, t);
    if (!t.is_contiguous()) fail(std::string(name) + " " + t.describe() + " is not contiguous");
    dtype(name, t, dtypes);
  }
  /// `t` has one of `dtypes`.
  void dtype(const char* name, const loom::Tensor& t, std::initializer_list<loom::DType> dtypes) const {
    for (loom::DType d : dtypes)
      if (t.dtype == d) return;
    // Appended rather than chained with operator+, on which GCC 12 at -O3 reports a false
    // -Wrestrict wherever this is inlined (GCC bug 105329).
    std::string message(name);
    message.append(" is ").append(t.describe()).append("; dtype must be ");
    const size_t first = message.size();
    for (loom::DType d : dtypes) message.append(message.size() > first ? "|" : "").append(loom::dtype_name(d));
    fail(message);
  }
  /// As tensor(), for an optional argument; returns whether it is present.
  bool optional(const char* name, const loom::Tensor& t, std::initializer_list<loom::DType> dtypes) const {
    if (!t.defined()) return false;
    tensor(name, t, dtypes);
    return true;
  }
  /// `t` has exactly the extents `expected`.
  void shape(const char* name, const loom::Tensor& t, std::initializer_list<int64_t> expected) const {
    bool ok = t.ndim == static_cast<int>(expected.size());
    int k = 0;
    for (int64_t e : expected) ok = ok && t.shape[k++] == e;
    if (ok) return;
    std::string text = "[";
    k = 0;
    for (int64_t e : expected) text += (k++ ? ", " : "") + std::to_string(e);
    fail(std::string(name) + " is " + t.describe() + ", expected " + text + "]");
  }
  /// `a` and `b` have the same extents.
  void same_shape(const char* name_a, const loom::Tensor& a, const char* name_b,
                  const loom::Tensor& b) const {
    if (!a.same_shape(b))
      fail(std::string(name_a) + " " + a.describe() + " and " + name_b + " " + b.describe() +
           " differ in shape");
  }
  /// `a` and `b` share no byte of the ranges their elements span (from the lowest to the highest
  /// element, whatever the strides; an empty view spans nothing). Conservative for strided views:
  /// two interleaved views of one buffer span overlapping ranges even where no element is shared.
  void disjoint(const char* name_a, const loom::Tensor& a, const char* name_b, const loom::Tensor& b) const {
    if (a.numel() == 0 || b.numel() == 0) return;
    const auto span = [](const loom::Tensor& t, uintptr_t& first, uintptr_t& end) {
      int64_t low = 0, high = 0;
      for (int k = 0; k < t.ndim; ++k) {
        const int64_t reach = (t.shape[k] - 1) * t.strides[k];
        (reach < 0 ? low : high) += reach;
      }
      const auto size = static_cast<int64_t>(loom::dtype_size(t.dtype));
      first = reinterpret_cast<uintptr_t>(t.data) + static_cast<uintptr_t>(low * size);
      end = reinterpret_cast<uintptr_t>(t.data) + static_cast<uintptr_t>((high + 1) * size);
    };
    uintptr_t a_first, a_end, b_first, b_end;
    span(a, a_first, a_end);
    span(b, b_first, b_end);
    if (a_end <= b_first || b_end <= a_first) return;
    std::string message(name_a);
    message.append(" ").append(a.describe()).append(" and ").append(name_b).append(" ").append(b.describe());
    fail(message.append(" overlap"));
  }
  /// The last extent of `t` (the feature dimension), which must exist.
  int64_t columns(const char* name, const loom::Tensor& t) const {
    if (t.ndim < 1) fail(std::string(name) + " needs at least one dimension");
    return t.shape[t.ndim - 1];
  }
  /// The op's name, for errors raised outside these checks (CUDA API failures).
  const char* op() const { return op_; }

 private:
  const char* op_;
  loom::Device device_;
};

}  // namespace loom_backend
