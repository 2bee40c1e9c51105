// compare_weights A.safetensors B.safetensors [--atol X | --rtol X]: every tensor of A must exist
// in B with the same shape; prints the largest absolute and relative difference and exits 1 when
// the largest absolute difference exceeds X (default 0: bit-identical values), or with --rtol
// when the relative difference of the whole model, ‖A − B‖₂ / ‖A‖₂ over every tensor, exceeds X
// (element-wise ratios blow up near zero). For e2e tests.
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <string>

#include "checkpoint/safetensors.hpp"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: compare_weights A.safetensors B.safetensors [--atol X | --rtol X]\n";
    return 2;
  }
  const bool relative = argc >= 5 && std::string(argv[3]) == "--rtol";
  const double atol = argc >= 5 && (std::string(argv[3]) == "--atol" || relative) ? std::atof(argv[4]) : 0.0;
  double difference_squares = 0, magnitude_squares = 0;
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
      for (size_t i = 0; i < x.size(); ++i) {
        const double d = static_cast<double>(x[i]) - y[i];
        difference_squares += d * d;
        magnitude_squares += static_cast<double>(x[i]) * x[i];
      }
      for (size_t i = 0; i < x.size(); ++i) {
        const double diff = std::fabs(static_cast<double>(x[i]) - y[i]);
        if (!(diff <= max_abs)) max_abs = diff, worst = tensor.name;
        max_rel = std::max(max_rel, diff / std::max(1e-12, std::fabs(static_cast<double>(x[i]))));
      }
    }
    const double model_relative =
        magnitude_squares > 0 ? std::sqrt(difference_squares / magnitude_squares) : 0.0;
    std::cout << "max abs diff " << max_abs << " (" << worst << "), max rel diff " << max_rel
              << ", model relative diff " << model_relative << "\n";
    if (relative) return model_relative <= atol ? 0 : 1;
    return max_abs <= atol ? 0 : 1;
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
}
