// LossSums: the training losses of a logging window — total, masked-LM and next-sentence — summed
// where the model computes them, in three f32 scalars of backend memory. A step adds its
// micro-batches' losses with backend ops and reads nothing back; the host copies the sums once,
// when the window closes (on a GPU a read is a synchronisation: docs/gpu.md).
#pragma once

#include <array>

#include "loom/sdk/backend.hpp"
#include "model/model.hpp"

namespace loom::host {

class LossSums {
 public:
  /// The backend memory the three sums take.
  static constexpr size_t kDeviceBytes = 3 * sizeof(float);

  /// Allocates the sums on `backend`, zeroed.
  explicit LossSums(loom::Backend& backend);

  /// Adds the losses of the model's last forward (a head without masked-LM or next-sentence
  /// loss adds only its total).
  void add(const Model& model);

  /// The sums {loss, mlm_loss, nsp_loss} since the last take (one copy to the host); zeroes them.
  std::array<double, 3> take();

 private:
  loom::Tensor slot(int index) const;

  loom::Backend& backend_;
  loom::Buffer sums_;
};

}  // namespace loom::host
