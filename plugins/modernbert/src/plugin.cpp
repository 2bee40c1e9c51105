// The modernbert plugin: the blocks of Hugging Face's ModernBERT (docs/modernbert.md).
#include "loom/sdk/plugin.hpp"

#include "components.hpp"

LOOM_PLUGIN("modernbert", "0.1.0",
            "ModernBERT model blocks: embeddings, pre-LN rotary global/local encoder layer, MLM/classifier/span heads",
            loom_modernbert::embeddings_component(), loom_modernbert::encoder_layer_component(),
            loom_modernbert::pretraining_heads_component(), loom_modernbert::classifier_head_component(),
            loom_modernbert::span_head_component())
