// Host mirrors of backend buffers; see host_mirror.hpp.
#include "model/host_mirror.hpp"

#include <stdexcept>

namespace loom::host {

bool host_addressable(const loom::Backend& backend) {
  return backend.device().type == loom::DeviceType::cpu;
}

HostMirror::HostMirror(loom::Backend& backend, const loom::Tensor& flat)
    : backend_(backend), device_(flat.data), size_(static_cast<size_t>(flat.numel())), host_(nullptr) {
  if (flat.dtype != loom::DType::f32 || !flat.is_contiguous())
    throw std::invalid_argument("HostMirror: expected a contiguous f32 buffer, got " + flat.describe());
  if (host_addressable(backend)) {
    host_ = static_cast<float*>(device_);
  } else if (size_ > 0) {
    copy_.resize(size_);
    host_ = copy_.data();
  }
}

void HostMirror::pull() {
  if (copies()) backend_.copy_to_host(copy_.data(), device_, size_ * sizeof(float));
}

void HostMirror::push() {
  if (copies()) backend_.copy_from_host(device_, copy_.data(), size_ * sizeof(float));
}

}  // namespace loom::host
