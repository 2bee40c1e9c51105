// Validation of the views an op receives, with messages that name the op and the argument.
//
// Every CpuBackend op checks its arguments before touching memory: a wrong shape is a clear
// loom::Error ("layernorm_forward: gamma is f32[23], expected [24]"), never a silent overrun.
#pragma once

#include <initializer_list>
#include <string>

#include "loom/sdk/error.hpp"
#include "loom/sdk/tensor.hpp"

namespace loom_cpu {

using loom::DType;

class ArgumentChecks {
 public:
  explicit ArgumentChecks(const char* op) : op_(op) {}

  /// Throws loom::Error "op: message".
  [[noreturn]] void fail(const std::string& message) const {
    throw loom::Error(std::string(op_) + ": " + message);
  }
  /// Throws unless `condition`.
  void require(bool condition, const std::string& message) const {
    if (!condition) fail(message);
  }
  /// `t` is present, on the CPU, contiguous, with one of `dtypes`.
  void tensor(const char* name, const loom::Tensor& t, std::initializer_list<loom::DType> dtypes) const {
    if (!t.defined() && t.numel() != 0) fail(std::string(name) + " is absent");
    if (t.device.type != loom::DeviceType::cpu) fail(std::string(name) + " is not in CPU memory");
    if (!t.is_contiguous()) fail(std::string(name) + " " + t.describe() + " is not contiguous");
    for (loom::DType d : dtypes)
      if (t.dtype == d) return;
    std::string allowed;
    for (loom::DType d : dtypes) allowed += (allowed.empty() ? "" : "|") + std::string(loom::dtype_name(d));
    fail(std::string(name) + " is " + t.describe() + "; dtype must be " + allowed);
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
  /// The last extent of `t` (the feature dimension), which must exist.
  int64_t columns(const char* name, const loom::Tensor& t) const {
    if (t.ndim < 1) fail(std::string(name) + " needs at least one dimension");
    return t.shape[t.ndim - 1];
  }

 private:
  const char* op_;
};

}  // namespace loom_cpu
