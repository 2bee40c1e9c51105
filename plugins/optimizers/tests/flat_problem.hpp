// A small but representative flat parameter layout for optimizer tests: Hugging Face names, decayed
// weights, biases and LayerNorm (no decay), an all-zero weight (‖w‖ = 0), a segment with zero
// gradients and zero weights (‖u‖ = 0), an empty segment, a segment spanning several work blocks,
// and gaps no segment covers (which must stay untouched). Random data from a fixed seed.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "loom/sdk/optimizer.hpp"

namespace loom_optim_test {

struct FlatProblem {
  std::vector<std::string> names;
  std::vector<loom::ParameterSegment> segments;
  std::vector<bool> decays;  // expected with the default no_decay patterns
  size_t total = 0;
  std::vector<float> params;
  std::vector<std::vector<float>> grads;  // one flat gradient buffer per step

  /// Segments whose `name` pointers point into `names` (call after any copy/move).
  const loom::ParameterSegment* table() {
    for (size_t i = 0; i < segments.size(); ++i) segments[i].name = names[i].c_str();
    return segments.data();
  }
};

/// The global norm ‖g·grad_scale‖ over the problem's segments, in double precision (the references').
inline double scaled_norm(const FlatProblem& p, const std::vector<float>& g, double grad_scale) {
  double squares = 0;
  for (const auto& seg : p.segments)
    for (size_t i = seg.offset; i < seg.offset + seg.count; ++i) squares += std::pow(g[i] * grad_scale, 2);
  return std::sqrt(squares);
}

/// `grad_std`: spread of the unscaled gradients; `grad_multiplier`: the loss scale baked into them.
inline FlatProblem make_flat_problem(uint32_t seed, int steps, float grad_std, float grad_multiplier) {
  struct Spec {
    const char* name;
    size_t count;
    enum { random, zeros, ones } init;
    bool zero_grad;
    bool decays;
  };
  const Spec specs[] = {
      {"bert.encoder.layer.0.attention.self.query.weight", 1000, Spec::random, false, true},
      {"bert.encoder.layer.0.attention.self.query.bias", 37, Spec::random, false, false},
      {"bert.embeddings.LayerNorm.weight", 64, Spec::ones, false, false},
      {"bert.embeddings.LayerNorm.bias", 64, Spec::zeros, false, false},
      {"cls.predictions.transform.dense.weight", 300, Spec::zeros, false, true},
      {"bert.pooler.dense.bias", 50, Spec::zeros, true, false},
      {"bert.pooler.dense.weight", 0, Spec::random, false, true},
      {"bert.embeddings.word_embeddings.weight", 70001, Spec::random, false, true},
      {"cls.seq_relationship.weight", 123, Spec::random, true, true},
  };
  FlatProblem p;
  std::mt19937 rng(seed);
  std::normal_distribution<float> weight(0.0f, 0.02f), grad(0.0f, grad_std);
  size_t offset = 3;  // a gap before the first segment
  for (const Spec& s : specs) {
    p.names.push_back(s.name);
    p.segments.push_back({nullptr, offset, s.count, loom::DecayRule::by_name});
    p.decays.push_back(s.decays);
    offset += s.count + 5;  // and after every segment
  }
  p.total = offset;
  p.params.assign(p.total, 0.0f);
  for (size_t i = 0; i < p.total; ++i) p.params[i] = 7.0f + static_cast<float>(i % 3);  // gap sentinels
  for (size_t i = 0; i < p.segments.size(); ++i)
    for (size_t k = 0; k < specs[i].count; ++k)
      p.params[p.segments[i].offset + k] = specs[i].init == Spec::random ? weight(rng)
                                           : specs[i].init == Spec::ones ? 1.0f + weight(rng)
                                                                         : 0.0f;
  for (int step = 0; step < steps; ++step) {
    std::vector<float> g(p.total, 1e30f);  // gaps hold garbage the optimizer must not read
    for (size_t i = 0; i < p.segments.size(); ++i)
      for (size_t k = 0; k < specs[i].count; ++k)
        g[p.segments[i].offset + k] = specs[i].zero_grad ? 0.0f : grad(rng) * grad_multiplier;
    p.grads.push_back(std::move(g));
  }
  p.table();
  return p;
}

/// True when flat index `i` lies in no segment.
inline bool in_gap(const FlatProblem& p, size_t i) {
  for (const auto& s : p.segments)
    if (i >= s.offset && i < s.offset + s.count) return false;
  return true;
}

}  // namespace loom_optim_test
