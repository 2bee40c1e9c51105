// Tensor: a non-owning, DLPack-compatible view of memory a backend allocated.
//
// A view is plain data (pointer, dtype, device, shape, strides), trivially copyable, and crosses
// the plugin boundary by const reference. Shapes and strides are in ELEMENTS (as in DLPack), at
// most kMaxDims dimensions. Ops of a backend validate the views they are given and throw
// loom::Error naming the op and the offending argument. Conversion to and from DLPack uses
// Debian's dlpack header (libdlpack-dev 0.6). The scalar float conversions of bf16/f16 live in
// loom/sdk/float16.hpp.
#pragma once

#include <dlpack/dlpack.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "loom/sdk/error.hpp"
#include "loom/sdk/float16.hpp"
#include "loom/sdk/version.hpp"

static_assert(DLPACK_VERSION >= 60, "Loom needs dlpack >= 0.6 (Debian libdlpack-dev)");

LOOM_SDK_NAMESPACE_BEGIN

/// Element types a Tensor can hold. Values are Loom's own; DLPack codes are mapped explicitly.
enum class DType : int32_t { f32 = 0, bf16 = 1, f16 = 2, i32 = 3, i64 = 4, i8 = 5, u8 = 6 };

/// Bytes per element of `dtype`.
constexpr size_t dtype_size(DType dtype) noexcept {
  switch (dtype) {
    case DType::f32:
    case DType::i32:
      return 4;
    case DType::bf16:
    case DType::f16:
      return 2;
    case DType::i64:
      return 8;
    case DType::i8:
    case DType::u8:
      return 1;
  }
  return 0;
}

/// "f32", "bf16", ... (as written in messages and recipes).
constexpr const char* dtype_name(DType dtype) noexcept {
  switch (dtype) {
    case DType::f32:
      return "f32";
    case DType::bf16:
      return "bf16";
    case DType::f16:
      return "f16";
    case DType::i32:
      return "i32";
    case DType::i64:
      return "i64";
    case DType::i8:
      return "i8";
    case DType::u8:
      return "u8";
  }
  return "?";
}

/// The DType of C++ element type T (float, BFloat16, Half, int32_t, int64_t, int8_t, uint8_t).
template <typename T>
constexpr DType dtype_of() noexcept;
template <>
constexpr DType dtype_of<float>() noexcept {
  return DType::f32;
}
template <>
constexpr DType dtype_of<BFloat16>() noexcept {
  return DType::bf16;
}
template <>
constexpr DType dtype_of<Half>() noexcept {
  return DType::f16;
}
template <>
constexpr DType dtype_of<int32_t>() noexcept {
  return DType::i32;
}
template <>
constexpr DType dtype_of<int64_t>() noexcept {
  return DType::i64;
}
template <>
constexpr DType dtype_of<int8_t>() noexcept {
  return DType::i8;
}
template <>
constexpr DType dtype_of<uint8_t>() noexcept {
  return DType::u8;
}

/// Kinds of memory. Values equal DLPack's DLDeviceType codes.
enum class DeviceType : int32_t { cpu = kDLCPU, cuda = kDLCUDA };

/// Where a tensor's memory lives: a device kind and its index (0 for the CPU).
struct Device {
  DeviceType type = DeviceType::cpu;
  int32_t index = 0;
  friend constexpr bool operator==(Device a, Device b) { return a.type == b.type && a.index == b.index; }
  friend constexpr bool operator!=(Device a, Device b) { return !(a == b); }
};

/// Largest number of dimensions a view may have.
inline constexpr int kMaxDims = 6;

/// A non-owning view: element (i0, i1, ...) is at `data + Σ ik·strides[k]` elements.
/// A default-constructed view (data == nullptr, ndim == 0) means "absent" for optional arguments.
struct Tensor {
  void* data = nullptr;
  DType dtype = DType::f32;
  Device device{};
  int32_t ndim = 0;
  int64_t shape[kMaxDims] = {};
  int64_t strides[kMaxDims] = {};

  /// A dense row-major view of `shape` at `data`.
  static Tensor contiguous(void* data, DType dtype, std::initializer_list<int64_t> shape,
                           Device device = {}) {
    return contiguous(data, dtype, shape.begin(), static_cast<int>(shape.size()), device);
  }
  /// A dense row-major view of `shape[0..ndim)` at `data`.
  static Tensor contiguous(void* data, DType dtype, const int64_t* shape, int ndim, Device device = {}) {
    if (ndim < 0 || ndim > kMaxDims)
      throw Error("Tensor: " + std::to_string(ndim) + " dimensions; at most " + std::to_string(kMaxDims));
    Tensor t;
    t.data = data;
    t.dtype = dtype;
    t.device = device;
    t.ndim = ndim;
    int64_t stride = 1;
    for (int k = ndim - 1; k >= 0; --k) {
      if (shape[k] < 0) throw Error("Tensor: negative extent " + std::to_string(shape[k]));
      t.shape[k] = shape[k];
      t.strides[k] = stride;
      stride *= shape[k];
    }
    return t;
  }

  /// True unless this is the "absent" view.
  bool defined() const noexcept { return data != nullptr; }
  /// Product of the extents (1 for a 0-d view).
  int64_t numel() const noexcept {
    int64_t n = 1;
    for (int k = 0; k < ndim; ++k) n *= shape[k];
    return n;
  }
  /// Extent of dimension `dim`; negative counts from the end (-1 = last).
  int64_t size(int dim) const { return shape[checked_dim(dim)]; }
  /// Stride (elements) of dimension `dim`; negative counts from the end.
  int64_t stride(int dim) const { return strides[checked_dim(dim)]; }
  /// Bytes spanned by a contiguous view (numel · element size).
  size_t nbytes() const noexcept { return static_cast<size_t>(numel()) * dtype_size(dtype); }
  /// True when the view is dense row-major (extent-1 dimensions may have any stride).
  bool is_contiguous() const noexcept {
    int64_t expected = 1;
    for (int k = ndim - 1; k >= 0; --k) {
      if (shape[k] != 1 && strides[k] != expected) return false;
      expected *= shape[k];
    }
    return true;
  }
  /// Same dims and extents as `other` (strides and dtype may differ).
  bool same_shape(const Tensor& other) const noexcept {
    if (ndim != other.ndim) return false;
    for (int k = 0; k < ndim; ++k)
      if (shape[k] != other.shape[k]) return false;
    return true;
  }
  /// The data pointer typed as T; throws when T does not match the dtype.
  template <typename T>
  T* data_as() const {
    if (dtype_of<T>() != dtype)
      throw Error(std::string("Tensor: accessed ") + dtype_name(dtype) + " data as " +
                  dtype_name(dtype_of<T>()));
    return static_cast<T*>(data);
  }
  /// The view with `dim` restricted to [start, start + length).
  Tensor narrow(int dim, int64_t start, int64_t length) const {
    const int d = checked_dim(dim);
    if (start < 0 || length < 0 || start + length > shape[d])
      throw Error("Tensor::narrow: [" + std::to_string(start) + ", " + std::to_string(start + length) +
                  ") outside extent " + std::to_string(shape[d]));
    Tensor t = *this;
    t.data = static_cast<char*>(data) + start * strides[d] * static_cast<int64_t>(dtype_size(dtype));
    t.shape[d] = length;
    return t;
  }
  /// The view at `index` of dimension `dim`, with that dimension removed.
  Tensor select(int dim, int64_t index) const {
    Tensor t = narrow(dim, index, 1);
    const int d = checked_dim(dim);
    for (int k = d; k + 1 < ndim; ++k) {
      t.shape[k] = t.shape[k + 1];
      t.strides[k] = t.strides[k + 1];
    }
    --t.ndim;
    return t;
  }
  /// Dimensions reordered: result dim k is this view's dim `order[k]` (no data moves).
  Tensor permute(std::initializer_list<int> order) const {
    if (static_cast<int>(order.size()) != ndim) throw Error("Tensor::permute: order has the wrong length");
    Tensor t = *this;
    bool seen[kMaxDims] = {};
    int k = 0;
    for (int from : order) {
      const int d = checked_dim(from);
      if (seen[d]) throw Error("Tensor::permute: dimension repeated");
      seen[d] = true;
      t.shape[k] = shape[d];
      t.strides[k] = strides[d];
      ++k;
    }
    return t;
  }
  /// The same contiguous memory seen with another shape of equal numel.
  Tensor reshape(std::initializer_list<int64_t> new_shape) const {
    if (!is_contiguous()) throw Error("Tensor::reshape: view is not contiguous");
    Tensor t = contiguous(data, dtype, new_shape, device);
    if (t.numel() != numel())
      throw Error("Tensor::reshape: " + std::to_string(numel()) + " elements cannot take a shape of " +
                  std::to_string(t.numel()));
    return t;
  }
  /// "bf16[4, 7, 24]" for messages.
  std::string describe() const {
    std::string text = std::string(dtype_name(dtype)) + "[";
    for (int k = 0; k < ndim; ++k) text += (k ? ", " : "") + std::to_string(shape[k]);
    return text + "]";
  }

 private:
  int checked_dim(int dim) const {
    const int d = dim < 0 ? dim + ndim : dim;
    if (d < 0 || d >= ndim)
      throw Error("Tensor: dimension " + std::to_string(dim) + " out of range for " + std::to_string(ndim) +
                  "-d view");
    return d;
  }
};

/// DLPack's description of `dtype` (one lane).
constexpr DLDataType to_dlpack_dtype(DType dtype) noexcept {
  switch (dtype) {
    case DType::f32:
      return DLDataType{kDLFloat, 32, 1};
    case DType::bf16:
      return DLDataType{kDLBfloat, 16, 1};
    case DType::f16:
      return DLDataType{kDLFloat, 16, 1};
    case DType::i32:
      return DLDataType{kDLInt, 32, 1};
    case DType::i64:
      return DLDataType{kDLInt, 64, 1};
    case DType::i8:
      return DLDataType{kDLInt, 8, 1};
    case DType::u8:
      return DLDataType{kDLUInt, 8, 1};
  }
  return DLDataType{kDLOpaqueHandle, 0, 0};
}

/// Loom's DType for a DLPack type; throws UnsupportedError for anything else (vectors, complex...).
inline DType from_dlpack_dtype(DLDataType type) {
  if (type.lanes == 1) {
    if (type.code == kDLFloat && type.bits == 32) return DType::f32;
    if (type.code == kDLBfloat && type.bits == 16) return DType::bf16;
    if (type.code == kDLFloat && type.bits == 16) return DType::f16;
    if (type.code == kDLInt && type.bits == 32) return DType::i32;
    if (type.code == kDLInt && type.bits == 64) return DType::i64;
    if (type.code == kDLInt && type.bits == 8) return DType::i8;
    if (type.code == kDLUInt && type.bits == 8) return DType::u8;
  }
  throw UnsupportedError("DLPack dtype (code " + std::to_string(type.code) + ", bits " +
                         std::to_string(type.bits) + ", lanes " + std::to_string(type.lanes) +
                         ") has no Loom equivalent");
}

/// A view of a DLTensor (byte_offset folded into data; null strides mean row-major). The
/// DLTensor's memory must outlive the view. Throws for unsupported dtype/device or ndim > kMaxDims.
inline Tensor from_dlpack(const DLTensor& source) {
  if (source.ndim < 0 || source.ndim > kMaxDims)
    throw UnsupportedError("DLPack tensor has " + std::to_string(source.ndim) +
                           " dimensions; Loom views hold at most " + std::to_string(kMaxDims));
  Device device;
  if (source.device.device_type == kDLCPU || source.device.device_type == kDLCUDAHost)
    device = Device{DeviceType::cpu, 0};
  else if (source.device.device_type == kDLCUDA)
    device = Device{DeviceType::cuda, source.device.device_id};
  else
    throw UnsupportedError("DLPack device type " + std::to_string(source.device.device_type) +
                           " is not supported");
  Tensor t = Tensor::contiguous(static_cast<char*>(source.data) + source.byte_offset,
                                from_dlpack_dtype(source.dtype), source.shape, source.ndim, device);
  if (source.strides != nullptr)
    for (int k = 0; k < source.ndim; ++k) t.strides[k] = source.strides[k];
  return t;
}

/// A view of a managed tensor's DLTensor. Ownership stays with the caller, who calls its deleter.
inline Tensor from_dlpack(const DLManagedTensor& source) {
  return from_dlpack(source.dl_tensor);
}

/// A DLTensor describing `view`. Its shape/strides point INTO `view`, which must outlive it.
inline DLTensor to_dlpack(Tensor& view) noexcept {
  DLTensor out{};
  out.data = view.data;
  out.device = DLDevice{static_cast<DLDeviceType>(view.device.type), view.device.index};
  out.ndim = view.ndim;
  out.dtype = to_dlpack_dtype(view.dtype);
  out.shape = view.shape;
  out.strides = view.strides;
  out.byte_offset = 0;
  return out;
}

namespace detail {
/// Storage behind a DLManagedTensor made by to_dlpack_managed; freed by its deleter.
struct ManagedView {
  DLManagedTensor managed;
  Tensor view;
  void* owner;
  void (*release_owner)(void* owner) noexcept;
};
inline void delete_managed_view(DLManagedTensor* self) noexcept {
  auto* holder = static_cast<ManagedView*>(self->manager_ctx);
  if (holder->release_owner != nullptr) holder->release_owner(holder->owner);
  delete holder;
}
}  // namespace detail

/// A DLManagedTensor for a consumer that calls `deleter` when done. The deleter frees the
/// descriptor and then calls `release_owner(owner)` (may be null) so the memory's owner can
/// drop its reference. Use this to hand Loom memory to another framework.
inline DLManagedTensor* to_dlpack_managed(const Tensor& view, void* owner,
                                          void (*release_owner)(void*) noexcept) {
  auto* holder = new detail::ManagedView{};
  holder->view = view;
  holder->owner = owner;
  holder->release_owner = release_owner;
  holder->managed.dl_tensor = to_dlpack(holder->view);
  holder->managed.manager_ctx = holder;
  holder->managed.deleter = &detail::delete_managed_view;
  return &holder->managed;
}

LOOM_SDK_NAMESPACE_END
