// The CPU emulation of lane_primitives.cuh: see lane_emulator.hpp.
//
// The threads of a block are fibers (ucontext) on the calling CPU thread: a fiber runs until it
// waits at a barrier or ends, so a block's run is deterministic and a collective costs context
// switches, not OS thread hand-offs. AddressSanitizer is told of every stack switch.
#include "lane_emulator.hpp"

#include <ucontext.h>

#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>

#include "lane_primitives.cuh"
#include "loom/sdk/float16.hpp"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/common_interface_defs.h>
#define LOOM_EMULATOR_ASAN 1
#endif

namespace loom_cuda::emulation {
namespace {

enum class Collective { mma, ldmatrix, ldmatrix_trans, shfl, shfl_index, ballot };

/// What one lane posts for one collective.
struct Posting {
  Collective kind = Collective::mma;
  uint64_t sequence = ~uint64_t{0};  // matches no collective until a lane posts
  uint32_t a[4] = {};
  uint32_t b[2] = {};
  const void* address = nullptr;
  float value = 0.0f;
  uint32_t word = 0;
};

/// A barrier of fibers: the last of `expected` arrivals opens it (a new generation).
struct Barrier {
  int expected, arrived = 0;
  uint64_t generation = 0;
  void drop() {
    --expected;
    if (arrived > 0 && arrived >= expected) open();
  }
  void open() {
    arrived = 0;
    ++generation;
  }
};

struct Warp {
  Barrier barrier{32};
  Posting slots[2][32];  // alternating: a slot is rewritten only after every lane read it
};

float element(uint32_t word, int half, bool bf16) {
  const auto bits = static_cast<uint16_t>(word >> (16 * half));
  return bf16 ? loom::bf16_bits_to_f32(bits) : loom::f16_bits_to_f32(bits);
}

uint16_t b16_at(const void* row, int index) {
  uint16_t value;
  std::memcpy(&value, static_cast<const unsigned char*>(row) + 2 * index, sizeof value);
  return value;
}

class Block;

class EmulatedLane final : public lane::LaneOps {
 public:
  EmulatedLane(Block& block, Warp& warp, int thread)
      : block_(block), warp_(warp), thread_(thread), lane_(thread & 31) {}

  void block_sync() override;
  void mma_16816(float d[4], const uint32_t a[4], const uint32_t b[2], const float c[4], bool bf16) override;
  void ldmatrix_x4(uint32_t r[4], const void* row, bool trans) override;
  float shfl_xor(float v, int lane_mask) override {
    post(Collective::shfl).value = v;
    return exchange(Collective::shfl)[lane_ ^ lane_mask].value;
  }
  uint32_t shfl_index(uint32_t v, int source_lane) override {
    post(Collective::shfl_index).word = v;
    return exchange(Collective::shfl_index)[source_lane & 31].word;
  }
  uint32_t ballot(bool predicate) override {
    post(Collective::ballot).word = predicate ? 1u : 0u;
    const Posting* all = exchange(Collective::ballot);
    uint32_t bits = 0;
    for (int other = 0; other < 32; ++other) bits |= all[other].word << other;
    return bits;
  }

 private:
  Posting& post(Collective kind) {
    Posting& mine = warp_.slots[parity_][lane_];
    mine.kind = kind;
    mine.sequence = sequence_;
    return mine;
  }
  const Posting* exchange(Collective kind);

  Block& block_;
  Warp& warp_;
  int thread_, lane_;
  int parity_ = 0;
  uint64_t sequence_ = 0;
};

class Block {
 public:
  static constexpr size_t kStackBytes = 256 * 1024;

  Block(int threads, const std::function<void(int)>& body) : body_(body), block_barrier_{threads} {
    for (int w = 0; w < threads / 32; ++w) warps_.push_back(std::make_unique<Warp>());
    for (int t = 0; t < threads; ++t) fibers_.push_back(std::make_unique<Fiber>(*this, *warps_[t / 32], t));
  }

  std::vector<std::string> run() {
    for (auto& f : fibers_) {
      getcontext(&f->context);
      f->context.uc_stack.ss_sp = f->stack.get();
      f->context.uc_stack.ss_size = kStackBytes;
      f->context.uc_link = &scheduler_;
      makecontext(&f->context, reinterpret_cast<void (*)()>(&Block::entry), 0);
    }
    // Warp by warp, each as far as it gets (to its next block barrier, or its end) before the next
    // one starts: the order in which a missing block_sync shows, as one warp overwrites or reads a
    // tile the others have not finished with or not yet written.
    size_t running = fibers_.size();
    while (running > 0) {
      const uint64_t progress_before = progress_;
      for (size_t w = 0; w < warps_.size(); ++w) {
        uint64_t warp_progress;
        do {
          warp_progress = progress_;
          for (size_t t = 32 * w; t < 32 * w + 32; ++t) {
            Fiber& f = *fibers_[t];
            if (f.done) continue;
            resume(f);
            if (f.done) --running, ++progress_;
          }
        } while (progress_ != warp_progress);
      }
      if (running > 0 && progress_ == progress_before) {
        add_error("deadlock: every remaining thread waits at a barrier the others never reach");
        break;
      }
    }
    return std::move(errors_);
  }

  /// Waits (yielding to the other fibers) until `barrier` opens.
  void wait(Barrier& barrier) {
    const uint64_t generation = barrier.generation;
    if (++barrier.arrived >= barrier.expected) {
      barrier.open();
      ++progress_;
      return;
    }
    while (barrier.generation == generation) yield();
  }

  Barrier& block_barrier() { return block_barrier_; }
  void add_error(std::string message) {
    if (errors_.size() < 20) errors_.push_back(std::move(message));
  }

 private:
  struct Fiber {
    Fiber(Block& block, Warp& warp, int thread)
        : lane(block, warp, thread), warp(warp), thread(thread), stack(new char[kStackBytes]) {}
    EmulatedLane lane;
    Warp& warp;
    int thread;
    std::unique_ptr<char[]> stack;
    ucontext_t context{};
    bool done = false;
    void* asan_fake_stack = nullptr;
  };

  static inline thread_local Block* current_block_ = nullptr;

  static void entry() {
    Block& block = *current_block_;
    Fiber& fiber = *block.fibers_[block.current_];
#if defined(LOOM_EMULATOR_ASAN)
    __sanitizer_finish_switch_fiber(nullptr, &block.scheduler_stack_bottom_, &block.scheduler_stack_size_);
#endif
    try {
      block.body_(fiber.thread);
    } catch (const std::exception& e) {
      block.add_error("thread " + std::to_string(fiber.thread) + ": " + e.what());
    }
    // A thread that is done no longer holds up the others (a GPU thread that exits takes part in
    // no later barrier either); a collective that misses it reports the mismatch.
    fiber.done = true;
    fiber.warp.barrier.drop();
    block.block_barrier_.drop();
#if defined(LOOM_EMULATOR_ASAN)
    __sanitizer_start_switch_fiber(nullptr, block.scheduler_stack_bottom_, block.scheduler_stack_size_);
#endif
  }  // returns to scheduler_ through uc_link

  void resume(Fiber& fiber) {
    current_ = fiber.thread;
    current_block_ = this;
    lane::host_lane = &fiber.lane;
#if defined(LOOM_EMULATOR_ASAN)
    void* scheduler_fake_stack = nullptr;
    __sanitizer_start_switch_fiber(&scheduler_fake_stack, fiber.stack.get(), kStackBytes);
#endif
    swapcontext(&scheduler_, &fiber.context);
#if defined(LOOM_EMULATOR_ASAN)
    __sanitizer_finish_switch_fiber(scheduler_fake_stack, nullptr, nullptr);
#endif
    lane::host_lane = nullptr;
  }

  void yield() {
    Fiber& fiber = *fibers_[current_];
#if defined(LOOM_EMULATOR_ASAN)
    __sanitizer_start_switch_fiber(&fiber.asan_fake_stack, scheduler_stack_bottom_, scheduler_stack_size_);
#endif
    swapcontext(&fiber.context, &scheduler_);
#if defined(LOOM_EMULATOR_ASAN)
    __sanitizer_finish_switch_fiber(fiber.asan_fake_stack, &scheduler_stack_bottom_, &scheduler_stack_size_);
#endif
  }

  const std::function<void(int)>& body_;
  Barrier block_barrier_;
  std::vector<std::unique_ptr<Warp>> warps_;
  std::vector<std::unique_ptr<Fiber>> fibers_;
  std::vector<std::string> errors_;
  ucontext_t scheduler_{};
  int current_ = 0;
  uint64_t progress_ = 0;
  const void* scheduler_stack_bottom_ = nullptr;
  size_t scheduler_stack_size_ = 0;
};

void EmulatedLane::block_sync() {
  block_.wait(block_.block_barrier());
}

const Posting* EmulatedLane::exchange(Collective kind) {
  block_.wait(warp_.barrier);
  const Posting* all = warp_.slots[parity_];
  for (int other = 0; other < 32; ++other)
    if (all[other].kind != kind || all[other].sequence != sequence_) {
      block_.add_error("thread " + std::to_string(thread_) + ": collective " + std::to_string(sequence_) +
                       " of its warp is not the same in lane " + std::to_string(other));
      break;
    }
  parity_ ^= 1;
  ++sequence_;
  return all;
}

void EmulatedLane::mma_16816(float d[4], const uint32_t a[4], const uint32_t b[2], const float c[4],
                             bool bf16) {
  Posting& mine = post(Collective::mma);
  std::memcpy(mine.a, a, sizeof mine.a);
  std::memcpy(mine.b, b, sizeof mine.b);
  const Posting* all = exchange(Collective::mma);
  // PTX ISA, m16n8k16 .bf16/.f16: A element (row, k) is in lane (row % 8)·4 + (k % 8)/2, register
  // (row ≥ 8) + 2·(k ≥ 8), half k % 2; B element (k, n) in lane 4n + (k % 8)/2, register k ≥ 8,
  // half k % 2; C/D element r of lane l is (l/4 + 8·(r/2), 2·(l % 4) + r % 2).
  const auto a_at = [&](int row, int k) {
    return element(all[(row % 8) * 4 + (k % 8) / 2].a[(row >= 8 ? 1 : 0) + (k >= 8 ? 2 : 0)], k % 2, bf16);
  };
  const auto b_at = [&](int k, int n) {
    return element(all[4 * n + (k % 8) / 2].b[k >= 8 ? 1 : 0], k % 2, bf16);
  };
  for (int r = 0; r < 4; ++r) {
    const int row = lane_ / 4 + 8 * (r / 2), col = 2 * (lane_ % 4) + r % 2;
    double sum = c[r];
    for (int k = 0; k < 16; ++k) sum += static_cast<double>(a_at(row, k)) * b_at(k, col);
    d[r] = static_cast<float>(sum);
  }
}

void EmulatedLane::ldmatrix_x4(uint32_t r[4], const void* row, bool trans) {
  const Collective kind = trans ? Collective::ldmatrix_trans : Collective::ldmatrix;
  if (reinterpret_cast<uintptr_t>(row) % 16 != 0)
    block_.add_error("thread " + std::to_string(thread_) + ": ldmatrix row address not 16-byte aligned");
  post(kind).address = row;
  const Posting* all = exchange(kind);
  // Lanes 8m .. 8m + 7 address rows 0..7 of matrix m. Lane l receives row l/4, elements 2(l % 4)
  // and 2(l % 4) + 1; transposed, element l/4 of rows 2(l % 4) and 2(l % 4) + 1.
  for (int m = 0; m < 4; ++m) {
    uint16_t low, high;
    if (!trans) {
      const void* source = all[8 * m + lane_ / 4].address;
      low = b16_at(source, 2 * (lane_ % 4));
      high = b16_at(source, 2 * (lane_ % 4) + 1);
    } else {
      low = b16_at(all[8 * m + 2 * (lane_ % 4)].address, lane_ / 4);
      high = b16_at(all[8 * m + 2 * (lane_ % 4) + 1].address, lane_ / 4);
    }
    r[m] = static_cast<uint32_t>(low) | (static_cast<uint32_t>(high) << 16);
  }
}

}  // namespace

std::vector<std::string> run_block(int threads, const std::function<void(int thread)>& body) {
  if (threads <= 0 || threads % 32 != 0) return {"run_block: threads must be a positive multiple of 32"};
  Block block(threads, body);
  return block.run();
}

}  // namespace loom_cuda::emulation
