// Loss sums in backend memory; see loss_sums.hpp.
#include "train/loss_sums.hpp"

namespace loom::host {
namespace {

// A model output as a one-element f32 view (outputs are scalars of shape [] or [1]).
loom::Tensor scalar_view(const loom::Tensor& t, loom::Device device) {
  return loom::Tensor::contiguous(t.data, loom::DType::f32, {1}, device);
}

}  // namespace

LossSums::LossSums(loom::Backend& backend) : backend_(backend), sums_(backend, kDeviceBytes) {
  backend_.zero(loom::Tensor::contiguous(sums_.data(), loom::DType::f32, {3}, backend_.device()));
}

loom::Tensor LossSums::slot(int index) const {
  return loom::Tensor::contiguous(static_cast<float*>(sums_.data()) + index, loom::DType::f32, {1},
                                  backend_.device());
}

void LossSums::add(const Model& model) {
  backend_.axpby(1.0f, scalar_view(model.loss_tensor(), backend_.device()), 1.0f, slot(0));
  const char* parts[2] = {"mlm_loss", "nsp_loss"};
  for (int i = 0; i < 2; ++i) {
    const loom::Tensor t = model.output(parts[i]);
    if (t.defined()) backend_.axpby(1.0f, scalar_view(t, backend_.device()), 1.0f, slot(1 + i));
  }
}

std::array<double, 3> LossSums::take() {
  float host[3] = {0, 0, 0};
  backend_.copy_to_host(host, sums_.data(), sizeof host);
  backend_.zero(loom::Tensor::contiguous(sums_.data(), loom::DType::f32, {3}, backend_.device()));
  return {host[0], host[1], host[2]};
}

}  // namespace loom::host
