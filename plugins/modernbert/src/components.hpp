// The component descriptors of the modernbert plugin, one per block file.
#pragma once

#include "loom/sdk/plugin_abi.h"

namespace loom_modernbert {

loom_component_desc embeddings_component();         // embeddings.cpp
loom_component_desc encoder_layer_component();      // encoder_layer.cpp
loom_component_desc pretraining_heads_component();  // mlm_head.cpp
loom_component_desc classifier_head_component();    // classifier_head.cpp
loom_component_desc span_head_component();          // span_head.cpp

}  // namespace loom_modernbert
