// The component descriptors of the bert plugin: BERT's blocks, and RoBERTa's (family.hpp) — the
// shared blocks' files give both families' descriptors, RoBERTa's heads have files of their own.
#pragma once

#include "loom/sdk/plugin_abi.h"

namespace loom_bert {

loom_component_desc embeddings_component();         // embeddings.cpp
loom_component_desc encoder_layer_component();      // encoder_layer.cpp
loom_component_desc pretraining_heads_component();  // pretraining_heads.cpp
loom_component_desc classifier_head_component();    // classifier_head.cpp
loom_component_desc span_head_component();          // span_head.cpp

loom_component_desc roberta_embeddings_component();       // embeddings.cpp
loom_component_desc roberta_encoder_layer_component();    // encoder_layer.cpp
loom_component_desc roberta_lm_head_component();          // roberta_lm_head.cpp
loom_component_desc roberta_classifier_head_component();  // roberta_classifier_head.cpp
loom_component_desc roberta_span_head_component();        // span_head.cpp

}  // namespace loom_bert
