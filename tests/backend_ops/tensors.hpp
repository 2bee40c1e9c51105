// Host data of any dtype and its copy in a backend's memory: how a case hands the same inputs to
// the backend under test and to the reference, whatever memory each one has.
//
// HostTensor is plain host bytes with a dtype and a shape; values go in and come out as floats (ids
// and targets as integers), rounded to nearest even into bf16 and f16. Its view() is host memory,
// which is backend/cpu's memory, so the reference computes on it directly (backend/cuda's own
// tests use it too: plugins/backend-cuda/tests/cuda_test_support.hpp). DeviceTensor is a copy
// in the memory of any backend — host memory on backend/cpu, memory the host cannot read on
// backend/cpu-opaque and backend/cuda — moved only through copy_from_host and copy_to_host.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "loom/sdk/backend.hpp"

namespace loom_backend_ops {

struct HostTensor {
  loom::DType dtype = loom::DType::f32;
  std::vector<int64_t> shape;
  std::vector<unsigned char> bytes;

  int64_t numel() const {
    int64_t n = 1;
    for (int64_t e : shape) n *= e;
    return n;
  }
  /// A contiguous view in host memory (backend/cpu's device).
  loom::Tensor view() {
    return loom::Tensor::contiguous(bytes.data(), dtype, shape.data(), static_cast<int>(shape.size()));
  }
  static HostTensor zeros(loom::DType dtype, std::vector<int64_t> shape) {
    HostTensor t;
    t.dtype = dtype;
    t.shape = std::move(shape);
    t.bytes.assign(static_cast<size_t>(t.numel()) * loom::dtype_size(dtype), 0);
    return t;
  }
  /// Floats rounded to `dtype` (f32, bf16, f16), or converted to an integer dtype.
  static HostTensor of(const std::vector<float>& values, loom::DType dtype, std::vector<int64_t> shape) {
    HostTensor t = zeros(dtype, std::move(shape));
    EXPECT_EQ(static_cast<size_t>(t.numel()), values.size()) << "test bug: shape does not match the values";
    for (size_t i = 0; i < values.size() && i < static_cast<size_t>(t.numel()); ++i)
      t.set(static_cast<int64_t>(i), values[i]);
    return t;
  }
  /// Integer ids or targets (i32, i64).
  static HostTensor ids(const std::vector<int64_t>& values, loom::DType dtype, std::vector<int64_t> shape) {
    HostTensor t = zeros(dtype, std::move(shape));
    EXPECT_EQ(static_cast<size_t>(t.numel()), values.size()) << "test bug: shape does not match the ids";
    for (size_t i = 0; i < values.size() && i < static_cast<size_t>(t.numel()); ++i) {
      if (dtype == loom::DType::i32) {
        const auto v = static_cast<int32_t>(values[i]);
        std::memcpy(t.bytes.data() + 4 * i, &v, 4);
      } else {
        std::memcpy(t.bytes.data() + 8 * i, &values[i], 8);
      }
    }
    return t;
  }
  void set(int64_t i, float v) {
    unsigned char* at = bytes.data() + static_cast<size_t>(i) * loom::dtype_size(dtype);
    switch (dtype) {
      case loom::DType::f32:
        std::memcpy(at, &v, 4);
        return;
      case loom::DType::bf16:
      case loom::DType::f16: {
        const uint16_t bits =
            dtype == loom::DType::bf16 ? loom::f32_to_bf16_bits(v) : loom::f32_to_f16_bits(v);
        std::memcpy(at, &bits, 2);
        return;
      }
      case loom::DType::i32: {
        const auto n = static_cast<int32_t>(v);
        std::memcpy(at, &n, 4);
        return;
      }
      case loom::DType::i64: {
        const auto n = static_cast<int64_t>(v);
        std::memcpy(at, &n, 8);
        return;
      }
      default: {
        const auto n = static_cast<uint8_t>(v);
        std::memcpy(at, &n, 1);
        return;
      }
    }
  }
  float get(int64_t i) const {
    const unsigned char* at = bytes.data() + static_cast<size_t>(i) * loom::dtype_size(dtype);
    switch (dtype) {
      case loom::DType::f32: {
        float v;
        std::memcpy(&v, at, 4);
        return v;
      }
      case loom::DType::bf16:
      case loom::DType::f16: {
        uint16_t bits;
        std::memcpy(&bits, at, 2);
        return dtype == loom::DType::bf16 ? loom::bf16_bits_to_f32(bits) : loom::f16_bits_to_f32(bits);
      }
      case loom::DType::i32: {
        int32_t v;
        std::memcpy(&v, at, 4);
        return static_cast<float>(v);
      }
      case loom::DType::i64: {
        int64_t v;
        std::memcpy(&v, at, 8);
        return static_cast<float>(v);
      }
      default:
        return static_cast<float>(*at);
    }
  }
  /// The stored bits of element i of a 16-bit tensor.
  uint16_t bits16(int64_t i) const {
    uint16_t bits;
    std::memcpy(&bits, bytes.data() + 2 * static_cast<size_t>(i), 2);
    return bits;
  }
  std::vector<float> floats() const {
    std::vector<float> out(static_cast<size_t>(numel()));
    for (int64_t i = 0; i < numel(); ++i) out[static_cast<size_t>(i)] = get(i);
    return out;
  }
};

/// A copy of a HostTensor in a backend's memory (frees itself). The backend must outlive it.
class DeviceTensor {
 public:
  DeviceTensor(loom::Backend& backend, const HostTensor& host)
      : backend_(&backend), dtype_(host.dtype), shape_(host.shape), buffer_(backend, host.bytes.size()) {
    backend.copy_from_host(buffer_.data(), host.bytes.data(), host.bytes.size());
  }
  /// A contiguous view on the backend's device.
  loom::Tensor view() const {
    return loom::Tensor::contiguous(buffer_.data(), dtype_, shape_.data(), static_cast<int>(shape_.size()),
                                    backend_->device());
  }
  /// The contents, back on the host (copy_to_host waits for every op issued before).
  HostTensor download() const {
    HostTensor host = HostTensor::zeros(dtype_, shape_);
    backend_->copy_to_host(host.bytes.data(), buffer_.data(), host.bytes.size());
    return host;
  }
  std::vector<float> floats() const { return download().floats(); }

 private:
  loom::Backend* backend_;
  loom::DType dtype_;
  std::vector<int64_t> shape_;
  loom::Buffer buffer_;
};

}  // namespace loom_backend_ops
