// Initial parameter values; see parameter_init.hpp.
#include "model/parameter_init.hpp"

#include <cmath>
#include <stdexcept>

namespace loom::host {
namespace {

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t fnv1a(const std::string& text) {
  uint64_t hash = 0xCBF29CE484222325ull;
  for (unsigned char c : text) hash = (hash ^ c) * 0x100000001B3ull;
  return hash;
}

// Uniform in (0, 1]: 53 random bits, never 0 (log stays finite).
double uniform(uint64_t& state) {
  return (static_cast<double>(splitmix64(state) >> 11) + 1.0) * 0x1.0p-53;
}

}  // namespace

void initial_values(const ParameterEntry& entry, float std, uint64_t seed, std::span<float> values) {
  if (values.size() != entry.count)
    throw std::invalid_argument("initial_values: buffer size differs from the count");
  switch (entry.init) {
    case loom::ParameterInit::zeros:
      for (float& v : values) v = 0.0f;
      return;
    case loom::ParameterInit::ones:
      for (float& v : values) v = 1.0f;
      return;
    case loom::ParameterInit::normal:
      break;
  }
  uint64_t state = seed ^ fnv1a(entry.name);
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  for (size_t i = 0; i < values.size(); i += 2) {
    const double radius = std::sqrt(-2.0 * std::log(uniform(state)));
    const double angle = kTwoPi * uniform(state);
    values[i] = static_cast<float>(std * radius * std::cos(angle));
    if (i + 1 < values.size()) values[i + 1] = static_cast<float>(std * radius * std::sin(angle));
  }
}

}  // namespace loom::host
