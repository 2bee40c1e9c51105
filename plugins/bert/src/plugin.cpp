// The bert plugin: the blocks of Hugging Face / NVIDIA BERT (docs/design.md §3, docs/reference.md §2.9)
// and of RoBERTa, BERT's encoder with its own positions and heads (docs/roberta.md).
#include "loom/sdk/plugin.hpp"

#include "components.hpp"

LOOM_PLUGIN("bert", "0.1.0",
            "BERT and RoBERTa model blocks: embeddings, encoder layer, pretraining/classifier/span heads",
            loom_bert::embeddings_component(), loom_bert::encoder_layer_component(),
            loom_bert::pretraining_heads_component(), loom_bert::classifier_head_component(),
            loom_bert::span_head_component(), loom_bert::roberta_embeddings_component(),
            loom_bert::roberta_encoder_layer_component(), loom_bert::roberta_lm_head_component(),
            loom_bert::roberta_classifier_head_component(), loom_bert::roberta_span_head_component())
