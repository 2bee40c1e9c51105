// The bert plugin: the blocks of Hugging Face / NVIDIA BERT (docs/design.md §3, docs/reference.md §2.9).
#include "loom/sdk/plugin.hpp"

#include "components.hpp"

LOOM_PLUGIN("bert", "0.1.0",
            "BERT model blocks: embeddings, encoder layer, pretraining/classifier/span heads",
            loom_bert::embeddings_component(), loom_bert::encoder_layer_component(),
            loom_bert::pretraining_heads_component(), loom_bert::classifier_head_component(),
            loom_bert::span_head_component())
