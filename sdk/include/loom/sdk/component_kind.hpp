// Names of the component kinds, as used in component names ("optimizer/nvlamb") and recipes.
#pragma once

#include <cstring>

#include "loom/sdk/plugin_abi.h"
#include "loom/sdk/version.hpp"

LOOM_SDK_NAMESPACE_BEGIN

/// "backend", "tokenizer", ... for a kind; nullptr for a value this SDK does not know.
inline const char* kind_name(uint32_t kind) noexcept {
  switch (kind) {
    case LOOM_KIND_BACKEND:
      return "backend";
    case LOOM_KIND_TOKENIZER:
      return "tokenizer";
    case LOOM_KIND_DATASET:
      return "dataset";
    case LOOM_KIND_BLOCK:
      return "block";
    case LOOM_KIND_OPTIMIZER:
      return "optimizer";
    case LOOM_KIND_SCHEDULE:
      return "schedule";
    case LOOM_KIND_PRECISION:
      return "precision";
    case LOOM_KIND_COMMUNICATOR:
      return "communicator";
  }
  return nullptr;
}

/// The kind named `name`, or 0 when there is none.
inline uint32_t kind_from_name(const char* name) noexcept {
  for (uint32_t kind = LOOM_KIND_BACKEND; kind <= LOOM_KIND_COMMUNICATOR; ++kind)
    if (std::strcmp(kind_name(kind), name) == 0) return kind;
  return 0;
}

LOOM_SDK_NAMESPACE_END
