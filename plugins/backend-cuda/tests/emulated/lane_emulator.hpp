// Runs the Tensor-Core kernels' __host__ __device__ block bodies on the CPU, one CPU thread per
// GPU thread, with the warp-collective primitives of lane_primitives.cuh emulated from the PTX
// ISA's documented fragment layouts ("Matrix Fragments for mma.m16n8k16 with floating point
// type", "ldmatrix"), written here independently of the kernels' own index helpers.
//
// A collective (mma, ldmatrix, shfl) posts the lane's operands to its warp's exchange slot, waits
// at the warp's barrier, then computes the lane's result from every lane's posting. Each posting
// carries the collective's kind and sequence number; a warp whose lanes disagree (divergent
// control flow around a collective, a lane that returned early) is recorded as an error that
// run_block reports, instead of hanging.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace loom_cuda::emulation {

/// Runs body(thread) for threads 0 .. threads − 1 of one block (threads a multiple of 32), each
/// on its own CPU thread with lane::host_lane set. Returns the errors the collectives found (empty
/// when the block ran as a GPU would); exceptions from the body are returned as errors too.
std::vector<std::string> run_block(int threads, const std::function<void(int thread)>& body);

}  // namespace loom_cuda::emulation
