// Validation of the views a CudaBackend op receives: backend/cpu's ArgumentChecks (shapes,
// dtypes and the wording of every message) with the device test replaced by "on this GPU".
#pragma once

#include <initializer_list>
#include <string>

#include "argument_checks.hpp"  // plugins/backend-cpu/src: header only, backend-neutral helpers
#include "loom/sdk/tensor.hpp"

namespace loom_cuda {

using loom::DType;

class CudaArgumentChecks {
 public:
  CudaArgumentChecks(const char* op, loom::Device device) : op_(op), device_(device), shapes_(op) {}

  [[noreturn]] void fail(const std::string& message) const { shapes_.fail(message); }
  void require(bool condition, const std::string& message) const { shapes_.require(condition, message); }

  /// `t` is on this backend's GPU (or empty), whatever its layout.
  void on_device(const char* name, const loom::Tensor& t) const {
    if (!t.defined() && t.numel() != 0) fail(std::string(name) + " is absent");
    if (t.numel() != 0 && t.device != device_)
      fail(std::string(name) + " " + t.describe() + " is not in the memory of CUDA device " +
           std::to_string(device_.index));
  }
  /// `t` is present, on this GPU, contiguous, with one of `dtypes`.
  void tensor(const char* name, const loom::Tensor& t, std::initializer_list<loom::DType> dtypes) const {
    on_device(name, t);
    if (!t.is_contiguous()) fail(std::string(name) + " " + t.describe() + " is not contiguous");
    dtype(name, t, dtypes);
  }
  /// `t` has one of `dtypes`.
  void dtype(const char* name, const loom::Tensor& t, std::initializer_list<loom::DType> dtypes) const {
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
  void shape(const char* name, const loom::Tensor& t, std::initializer_list<int64_t> expected) const {
    shapes_.shape(name, t, expected);
  }
  void same_shape(const char* name_a, const loom::Tensor& a, const char* name_b,
                  const loom::Tensor& b) const {
    shapes_.same_shape(name_a, a, name_b, b);
  }
  int64_t columns(const char* name, const loom::Tensor& t) const { return shapes_.columns(name, t); }
  const char* op() const { return op_; }

 private:
  const char* op_;
  loom::Device device_;
  loom_cpu::ArgumentChecks shapes_;
};

}  // namespace loom_cuda
