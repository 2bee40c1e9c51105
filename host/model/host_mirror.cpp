// Host mirrors of backend buffers; see host_mirror.hpp.
#include "model/host_mirror.hpp"

#include <stdexcept>

namespace loom::host {

bool host_addressable(const loom::Backend& backend) {
  return backend.device().type == loom::DeviceType::cpu;
}

HostMirror::HostMirror(loom::Backend& backend, const loom::Tensor& flat)
    : backend_(backend),
      device_(flat.data),
      size_(static_cast<size_t>(flat.numel())),
      copies_(!host_addressable(backend) && flat.numel() > 0) {
  if (flat.dtype != loom::DType::f32 || !flat.is_contiguous())
    throw std::invalid_argument("HostMirror: expected a contiguous f32 buffer, got " + flat.describe());
}

float* HostMirror::host() const {
  if (!copies_) return static_cast<float*>(device_);
  if (copy_.empty()) copy_.resize(size_);
  return copy_.data();
}

void HostMirror::pull() {
  if (copies_) backend_.copy_to_host(host(), device_, size_ * sizeof(float));
}

void HostMirror::push() {
  if (copies_) backend_.copy_from_host(device_, host(), size_ * sizeof(float));
}

}  // namespace loom::host
