// Model FLOP count of BERT pre-training (training_flops.hpp).
#include "model/training_flops.hpp"

namespace loom::host {

double bert_forward_flops(const loom::ModelConfig& config, int64_t seq, int64_t predictions) {
  const double T = static_cast<double>(seq), H = config.hidden_size, I = config.intermediate_size,
               V = config.vocab_size, P = static_cast<double>(predictions);
  const double projections = 2.0 * T * H * (4.0 * H);  // Q, K, V, attention output
  const double attention = 2.0 * (2.0 * T * T * H);    // q·kᵀ and probs·v over all heads
  const double feed_forward = 2.0 * T * (2.0 * H * I);
  const double layers = config.num_hidden_layers * (projections + attention + feed_forward);
  const double pooler_and_nsp = 2.0 * H * H + 2.0 * H * 2.0;
  const double masked_lm = 2.0 * P * H * H + 2.0 * P * H * V;  // transform + tied decoder
  return layers + pooler_and_nsp + masked_lm;
}

double bert_training_flops(const loom::ModelConfig& config, int64_t seq, int64_t predictions) {
  return 3.0 * bert_forward_flops(config, seq, predictions);
}

}  // namespace loom::host
