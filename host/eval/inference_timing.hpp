// Timing inference requests through a built model, for `loom bench --inference`
// (host/cli/inference_bench.cpp).
//
// One request is what an inference server does for one batch: upload the batch, run the model
// forward without dropout, and download every output of the head (Model::head_outputs) — on a
// device backend the download is also what waits for the forward to finish. Batches are
// synthetic and full length: token ids uniform in [1, vocab_size) (never [PAD], id 0), every
// position attended, segment 0, no labels. Without labels a head computes its outputs and no
// loss: the span head its start/end logits, the classifier its class logits, the pre-training
// heads the pooler and NSP logits (their MLM decoder runs only on labelled positions).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/batch_staging.hpp"
#include "model/model.hpp"

namespace loom::host {

/// A full-length batch of `batch` × `seq` random token ids (deterministic in `seed`).
struct SyntheticBatch {
  SyntheticBatch(int64_t batch, int64_t seq, int64_t vocab_size, uint64_t seed);
  /// The host view BatchStaging uploads; valid while this object lives.
  HostBatch view() const;

  int64_t batch = 0, seq = 0;
  std::vector<int32_t> input_ids, token_type_ids, attention_mask;
};

struct InferenceTiming {
  std::vector<double> seconds;       ///< wall-clock time of each timed request
  std::vector<std::string> outputs;  ///< the head outputs each request downloaded
  size_t output_bytes = 0;           ///< bytes downloaded per request
};

/// Runs `warmup` untimed requests, then `iterations` timed ones, of `batch` through `model`
/// (reserved for it, weights set). Throws std::runtime_error when the head has no outputs or one
/// cannot be downloaded (neither contiguous nor rows with a unit column stride).
InferenceTiming time_inference(Model& model, BatchStaging& staging, const HostBatch& batch, int warmup,
                               int iterations);

}  // namespace loom::host
