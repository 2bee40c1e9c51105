// compare_weights A.safetensors B.safetensors [--atol X | --rtol X]: every tensor of A must exist
// in B with the same shape; prints the largest absolute and relative difference and exits 1 when
// the largest absolute difference exceeds X (default 0: bit-identical values), or with --rtol
// when some tensor's largest absolute difference exceeds X × its largest magnitude in A (a
// normwise relative difference: element-wise ratios blow up near zero). For e2e tests.
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <string>

#include "loom/host/safetensors.hpp"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: compare_weights A.safetensors B.safetensors [--atol X | --rtol X]\n";
    return 2;
  }
  const bool relative = argc >= 5 && std::string(argv[3]) == "--rtol";
  const double atol = argc >= 5 && (std::string(argv[3]) == "--atol" || relative) ? std::atof(argv[4]) : 0.0;
  double worst_tensor_relative = 0;
  try {
    const auto a = loom::host::SafetensorsFile::open(argv[1]);
    const auto b = loom::host::SafetensorsFile::open(argv[2]);
    double max_abs = 0, max_rel = 0;
    std::string worst;
    for (const auto& tensor : a.tensors()) {
      const auto* other = b.find(tensor.name);
      if (other == nullptr || other->shape != tensor.shape) {
        std::cerr << tensor.name << ": missing or of another shape in " << argv[2] << "\n";
        return 1;
      }
      const auto x = a.read_f32(tensor.name), y = b.read_f32(tensor.name);
      double tensor_abs = 0, tensor_magnitude = 0;
      for (size_t i = 0; i < x.size(); ++i) {
        tensor_abs = std::max(tensor_abs, std::fabs(static_cast<double>(x[i]) - y[i]));
        tensor_magnitude = std::max(tensor_magnitude, std::fabs(static_cast<double>(x[i])));
      }
      if (tensor_magnitude > 0) worst_tensor_relative = std::max(worst_tensor_relative, tensor_abs / tensor_magnitude);
      for (size_t i = 0; i < x.size(); ++i) {
        const double diff = std::fabs(static_cast<double>(x[i]) - y[i]);
        if (!(diff <= max_abs)) max_abs = diff, worst = tensor.name;
        max_rel = std::max(max_rel, diff / std::max(1e-12, std::fabs(static_cast<double>(x[i]))));
      }
    }
    std::cout << "max abs diff " << max_abs << " (" << worst << "), max rel diff " << max_rel
              << ", max normwise rel diff " << worst_tensor_relative << "\n";
    if (relative) return worst_tensor_relative <= atol ? 0 : 1;
    return max_abs <= atol ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
