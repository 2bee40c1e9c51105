// What a case is written against: the fixture every op family's suite derives from, parameterized
// by the backend name, and LOOM_BACKEND_OP_FAMILY, which declares a family's suite and runs its
// cases on every backend of the build (backends.hpp):
//
//   LOOM_BACKEND_OP_FAMILY(Activations);
//   TEST_P(Activations, TanhMatchesFiniteDifferences) {
//     DeviceTensor x = upload(HostTensor::of(random_floats(29, 57, -3, 3), DType::f32, {29}));
//     ...
//   }
//
// runs as Backends/Activations.TanhMatchesFiniteDifferences/cpu, .../cpu_opaque and .../cuda. A
// case hands its inputs to the backend under test with upload() and reads results back with
// read() or download(); the reference (backend/cpu, one thread) computes on HostTensor views
// directly. CTest runs each family on each backend as one test, backend_ops.<Family>.<backend>
// (tests/backend_ops/CMakeLists.txt lists the families).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backends.hpp"
#include "checks.hpp"
#include "references.hpp"
#include "tensors.hpp"
#include "tolerances.hpp"

namespace loom_backend_ops {

class BackendOpCase : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string reason = why_not_available(GetParam());
    if (!reason.empty()) {
      if (device_required())
        GTEST_FAIL() << "LOOM_REQUIRE_GPU=1 but backend/" << GetParam() << ": " << reason;
      GTEST_SKIP() << "backend/" << GetParam() << ": " << reason;
    }
    under_test_ = &backend_under_test(GetParam());
  }

  /// The backend under test.
  loom::Backend& backend() const { return under_test_->backend(); }
  /// "backend/cpu", "backend/cpu-opaque", "backend/cuda" (for messages).
  std::string backend_label() const { return "backend/" + under_test_->name; }
  /// The backend under test's implementation of named interface I, or nullptr.
  template <typename I>
  I* offered() const {
    return under_test_->component.find<I>();
  }
  /// Its ops are backend/cpu's code (see BackendUnderTest).
  bool runs_reference_code() const { return under_test_->runs_reference_code; }

  /// The reference backend (backend/cpu, one thread): its memory is host memory.
  static loom::Backend& reference() { return reference_backend().backend(); }
  template <typename I>
  static I* reference_offers() {
    return reference_backend().component.find<I>();
  }

  /// A copy of `host` in the backend under test's memory.
  DeviceTensor upload(const HostTensor& host) const { return DeviceTensor(backend(), host); }
  DeviceTensor upload_zeros(loom::DType dtype, std::vector<int64_t> shape) const {
    return upload(HostTensor::zeros(dtype, std::move(shape)));
  }
  /// The values of a tensor of the backend under test, as floats.
  static std::vector<float> read(const DeviceTensor& tensor) { return tensor.floats(); }

  /// `against_reference` where the backend runs backend/cpu's code; elsewhere widened by what two
  /// implementations storing `stored` may differ by (tolerances.hpp).
  Tolerance for_this_backend(Tolerance against_reference, loom::DType stored) const {
    return for_this_backend(against_reference, across_implementations(stored));
  }
  /// The same with the bound two implementations of this op may differ by given.
  Tolerance for_this_backend(Tolerance against_reference, Tolerance across) const {
    return runs_reference_code() ? against_reference : against_reference + across;
  }

 private:
  BackendUnderTest* under_test_ = nullptr;
};

/// Gtest's name for a case's backend parameter.
struct BackendTestName {
  std::string operator()(const ::testing::TestParamInfo<std::string>& info) const {
    return test_name_of(info.param);
  }
};

}  // namespace loom_backend_ops

/// Declares op family `Family` (a test suite) and runs its cases on every backend of the build.
#define LOOM_BACKEND_OP_FAMILY(Family) LOOM_BACKEND_OP_FAMILY_OF(Family, ::loom_backend_ops::BackendOpCase)
/// The same for a family whose cases share helpers of their own: `Base` derives from BackendOpCase.
#define LOOM_BACKEND_OP_FAMILY_OF(Family, Base)                                                        \
  class Family : public Base {};                                                                       \
  INSTANTIATE_TEST_SUITE_P(Backends, Family, ::testing::ValuesIn(::loom_backend_ops::backend_names()), \
                           ::loom_backend_ops::BackendTestName{})

/// In a case: skips where the backend runs backend/cpu's code, for cases at sizes where comparing
/// that code with itself would prove nothing and only cost time.
#define LOOM_SKIP_WHERE_REFERENCE_CODE_RUNS()                                                       \
  do {                                                                                              \
    if (runs_reference_code())                                                                      \
      GTEST_SKIP() << backend_label() << " runs backend/cpu's code: at this size it would only be " \
                   << "compared with itself";                                                       \
  } while (0)

/// In a case: `Interface* variable` of the backend under test; skips when the backend does not
/// offer the op family (a backend need not).
#define LOOM_OFFERED_OR_SKIP(Interface, variable)   \
  Interface* const variable = offered<Interface>(); \
  if (variable == nullptr) GTEST_SKIP() << backend_label() << " does not offer " #Interface
