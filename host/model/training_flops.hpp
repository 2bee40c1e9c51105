// Model FLOPs of one BERT pre-training sequence: what `loom bench` divides by time to report
// achieved TFLOP/s and the share of a device's peak (MFU), the figure NVIDIA and PyTorch quote.
//
// Counted: every matrix product of the forward (2 FLOPs per multiply-add) — Q, K, V and output
// projections, the two attention products (T² per head), the feed-forward, the pooler and NSP
// head on [CLS], and the MLM transform and decoder over the masked positions only (as Loom and
// the reference evaluate them) — times 3 for training (backward = 2 × forward). Element-wise ops,
// softmax, LayerNorm and the optimizer are not counted, so the figure compares across systems.
#pragma once

#include <cstdint>

#include "loom/sdk/model_config.hpp"

namespace loom::host {

/// Forward matrix FLOPs of one sequence of `seq` tokens with `predictions` masked positions.
double bert_forward_flops(const loom::ModelConfig& config, int64_t seq, int64_t predictions);

/// Training (forward + backward) model FLOPs of one sequence: 3 × bert_forward_flops.
double bert_training_flops(const loom::ModelConfig& config, int64_t seq, int64_t predictions);

}  // namespace loom::host
