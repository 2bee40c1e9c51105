// Timed inference requests; see inference_timing.hpp.
#include "eval/inference_timing.hpp"

#include <chrono>
#include <random>
#include <stdexcept>

namespace loom::host {
namespace {

/// Copies `tensor` (contiguous, or 2-D rows with unit column stride) into `host`.
void download(loom::Backend& backend, const char* name, const loom::Tensor& tensor, std::vector<char>& host) {
  const size_t element = loom::dtype_size(tensor.dtype);
  host.resize(static_cast<size_t>(tensor.numel()) * element);
  if (tensor.is_contiguous()) {
    backend.copy_to_host(host.data(), tensor.data, host.size());
    return;
  }
  if (tensor.ndim != 2 || tensor.strides[1] != 1)
    throw std::runtime_error(std::string("head output ") + name + " is a " + tensor.describe() +
                             " view that cannot be read back row by row");
  const size_t row_bytes = static_cast<size_t>(tensor.shape[1]) * element;
  for (int64_t r = 0; r < tensor.shape[0]; ++r)
    backend.copy_to_host(
        host.data() + static_cast<size_t>(r) * row_bytes,
        static_cast<const char*>(tensor.data) + r * tensor.strides[0] * static_cast<int64_t>(element),
        row_bytes);
}

}  // namespace

SyntheticBatch::SyntheticBatch(int64_t rows, int64_t columns, int64_t vocab_size, uint64_t seed)
    : batch(rows), seq(columns) {
  if (rows <= 0 || columns <= 0 || vocab_size < 2)
    throw std::invalid_argument("a synthetic batch needs positive rows and columns and a vocabulary of 2+");
  const auto n = static_cast<size_t>(rows * columns);
  std::mt19937_64 generator(seed);
  std::uniform_int_distribution<int32_t> id(1, static_cast<int32_t>(vocab_size - 1));
  input_ids.resize(n);
  for (auto& v : input_ids) v = id(generator);
  token_type_ids.assign(n, 0);
  attention_mask.assign(n, 1);
}

HostBatch SyntheticBatch::view() const {
  HostBatch b;
  b.batch = batch;
  b.seq = seq;
  b.input_ids = input_ids.data();
  b.token_type_ids = token_type_ids.data();
  b.attention_mask = attention_mask.data();
  return b;
}

InferenceTiming time_inference(Model& model, BatchStaging& staging, const HostBatch& batch, int warmup,
                               int iterations) {
  loom::Backend& backend = model.backend();
  InferenceTiming timing;
  std::vector<std::vector<char>> host;  // one buffer per head output, reused by every request
  for (int i = 0; i < warmup + iterations; ++i) {
    const auto start = std::chrono::steady_clock::now();
    const loom::BatchView& view = staging.upload(batch);
    model.forward(view, StepSettings{false, 0}, staging.packed());
    const std::vector<loom::BlockOutput> outputs = model.head_outputs();
    if (outputs.empty()) throw std::runtime_error("the model's head defined no outputs to read back");
    host.resize(outputs.size());
    for (size_t o = 0; o < outputs.size(); ++o) download(backend, outputs[o].name, outputs[o].value, host[o]);
    backend.synchronize();
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (i < warmup) continue;
    timing.seconds.push_back(seconds);
    if (timing.outputs.empty()) {
      for (size_t o = 0; o < outputs.size(); ++o) {
        timing.outputs.emplace_back(outputs[o].name);
        timing.output_bytes += host[o].size();
      }
    }
  }
  return timing;
}

}  // namespace loom::host
