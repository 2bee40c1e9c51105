// ModelArchitecture: the Hugging Face class a model ending in this head is — a named interface a
// head block may offer (interfaces.hpp). The host writes it as `architectures` into the config.json
// of every checkpoint, so Hugging Face's Auto classes and `loom predict` know what the weights are
// for ("BertForSequenceClassification", "ModernBertForMaskedLM"). A head that does not offer it
// leaves the config's own `architectures` (the host names BERT's classes for the classification
// and span tasks, as before SDK 0.4).
#pragma once

#include <cstdint>

#include "loom/sdk/version.hpp"

LOOM_SDK_NAMESPACE_BEGIN

class ModelArchitecture {
 public:
  static constexpr const char* kInterfaceName = "loom.block.model_architecture";
  static constexpr uint32_t kInterfaceVersion = 1;

  /// After setup: the class name (static storage, or as long as the block lives).
  virtual const char* architecture() const = 0;

 protected:
  ~ModelArchitecture() = default;
};

LOOM_SDK_NAMESPACE_END
