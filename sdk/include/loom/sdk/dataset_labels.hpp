// DatasetLabels: the task's label map handed to a classification dataset before `open()` (a named
// interface, interfaces.hpp).
//
// The training and evaluation splits of one task are separate dataset components, and each would
// otherwise build its own label → class-index map from its own file: two files listing their
// labels differently, or a dev file with fewer classes, would give the same class index different
// names and evaluate silently wrong. So the host builds one map per task — from the training split
// (`[data]`), or from the checkpoint's config.json id2label when it evaluates a trained model — and
// hands it to every other split through this interface. A dataset that offers it then:
// - uses exactly these names in this order as its classes (label_name(i) == names[i],
//   limits().num_labels == count), whatever order or subset its own file has;
// - refuses, in `open()`, any example whose label is not one of them, with a loom::IoError naming
//   the file and line.
// Labels are compared as names (the text in the file), never as numbers. The host checks the
// label names of every split after `open()`, so a dataset that does not offer this interface but
// disagrees with the task's map is refused rather than evaluated with the wrong classes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "loom/sdk/version.hpp"

LOOM_SDK_NAMESPACE_BEGIN

class DatasetLabels {
 public:
  static constexpr const char* kInterfaceName = "loom.dataset.labels";
  static constexpr uint32_t kInterfaceVersion = 1;

  /// Before `open()`: the task's class names, index order; `count` ≥ 2. `source` says where they
  /// come from ("[data] (train.tsv)", "checkpoint/config.json id2label") for error messages. The
  /// strings are copied.
  virtual void use_labels(const char* const* names, size_t count, const char* source) = 0;

 protected:
  ~DatasetLabels() = default;
};

LOOM_SDK_NAMESPACE_END
