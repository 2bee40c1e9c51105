// Bf16Reduction; see bf16_reduction.hpp.
#include "bf16_reduction.hpp"

#include "loom/sdk/float16.hpp"
#include "mpi_completion.hpp"

namespace loom_mpi {
namespace {

void sum_bf16(void* in, void* inout, int* length, MPI_Datatype* /*type*/) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *length; ++i)
    b[i] = loom::f32_to_bf16_bits(loom::bf16_bits_to_f32(a[i]) + loom::bf16_bits_to_f32(b[i]));
}

}  // namespace

Bf16Reduction::Bf16Reduction() {
  check_mpi(MPI_Type_contiguous(2, MPI_BYTE, &type_), "MPI_Type_contiguous");
  check_mpi(MPI_Type_commit(&type_), "MPI_Type_commit");
  check_mpi(MPI_Op_create(&sum_bf16, 1, &sum_), "MPI_Op_create");
}

const Bf16Reduction& Bf16Reduction::instance() {
  static const Bf16Reduction reduction;
  return reduction;
}

void divide_bf16(uint16_t* values, size_t count, float divisor) {
  for (size_t i = 0; i < count; ++i)
    values[i] = loom::f32_to_bf16_bits(loom::bf16_bits_to_f32(values[i]) / divisor);
}

}  // namespace loom_mpi
