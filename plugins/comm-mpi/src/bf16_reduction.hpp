// bf16 reductions for MPI, which has no bfloat16 type: a 2-byte datatype and a sum operator
// that adds in f32 and rounds each partial sum to bf16 (round to nearest even).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>

namespace loom_mpi {

class Bf16Reduction {
 public:
  /// Created on first use (after MPI_Init); never freed: MPI_Finalize releases them.
  static const Bf16Reduction& instance();
  MPI_Datatype type() const { return type_; }
  MPI_Op sum() const { return sum_; }

 private:
  Bf16Reduction();
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
  MPI_Op sum_ = MPI_OP_NULL;
};

/// values[i] /= divisor in f32, rounded back to bf16.
void divide_bf16(uint16_t* values, size_t count, float divisor);

}  // namespace loom_mpi
