// HostMirror: on a CPU backend it is the buffer itself and never copies (the CPU path costs
// nothing); on any other device it is a host copy moved by exactly one copy_to_host (pull) or
// copy_from_host (push) of the whole buffer.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "model/host_mirror.hpp"

namespace loom::host {
namespace {

// A backend whose memory is plain host memory, reporting any device and counting transfers.
class CountingBackend final : public loom::Backend {
 public:
  explicit CountingBackend(loom::DeviceType type) : device_{type, 0} {}
  int downloads = 0, uploads = 0;
  size_t bytes_moved = 0;

  Device device() const override { return device_; }
  int threads() const override { return 1; }
  void* allocate(size_t bytes) override {
    return bytes == 0 ? nullptr : new float[bytes / sizeof(float) + 1];
  }
  void deallocate(void* data) override { delete[] static_cast<float*>(data); }
  void copy_from_host(void* device_dst, const void* host_src, size_t bytes) override {
    ++uploads, bytes_moved += bytes;
    std::memcpy(device_dst, host_src, bytes);
  }
  void copy_to_host(void* host_dst, const void* device_src, size_t bytes) override {
    ++downloads, bytes_moved += bytes;
    std::memcpy(host_dst, device_src, bytes);
  }
  void synchronize() override {}
  // No op is called by HostMirror.
  void fill(const Tensor&, double) override {}
  void zero(const Tensor&) override {}
  void copy(const Tensor&, const Tensor&) override {}
  void cast(const Tensor&, const Tensor&) override {}
  void gemm(const Tensor&, bool, const Tensor&, bool, const Tensor&, float, float) override {}
  void bias_add(const Tensor&, const Tensor&) override {}
  void bias_grad(const Tensor&, const Tensor&) override {}
  void bias_gelu_forward(const Tensor&, const Tensor&, const Tensor&, Gelu) override {}
  void bias_gelu_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                          Gelu) override {}
  void tanh_forward(const Tensor&, const Tensor&) override {}
  void tanh_backward(const Tensor&, const Tensor&, const Tensor&) override {}
  void add(const Tensor&, const Tensor&, const Tensor&) override {}
  void axpby(float, const Tensor&, float, const Tensor&) override {}
  void layernorm_forward(const Tensor&, const Tensor&, const Tensor&, float, const Tensor&, const Tensor&,
                         const Tensor&) override {}
  void layernorm_backward(const Tensor&, const Tensor&, const Tensor&, const Tensor&, const Tensor&,
                          const Tensor&, const Tensor&, const Tensor&, bool) override {}
  void additive_key_mask(const Tensor&, const Tensor&) override {}
  void softmax_forward(const Tensor&, const Tensor&, float, const Tensor&) override {}
  void softmax_backward(const Tensor&, const Tensor&, float, const Tensor&) override {}
  void dropout_forward(const Tensor&, const Tensor&, float, uint64_t, uint64_t) override {}
  void dropout_backward(const Tensor&, const Tensor&, float, uint64_t, uint64_t) override {}
  void embedding_gather(const Tensor&, const Tensor&, const Tensor&, bool) override {}
  void embedding_scatter_add(const Tensor&, const Tensor&, const Tensor&) override {}
  void cross_entropy(const Tensor&, const Tensor&, int64_t, int64_t, float, const Tensor&, const Tensor&,
                     const Tensor&, const Tensor&) override {}
  void sum_squares(const Tensor&, const int64_t*, size_t, const Tensor&) override {}
  void global_norm(const Tensor&, const Tensor&) override {}
  void check_finite(const Tensor&, const Tensor&) override {}

 private:
  Device device_;
};

TEST(HostMirror, OnTheCpuIsTheBufferItselfAndNeverCopies) {
  CountingBackend backend(loom::DeviceType::cpu);
  const loom::Buffer buffer(backend, 5 * sizeof(float));
  HostMirror mirror(backend, buffer.view(loom::DType::f32, {5}));
  EXPECT_TRUE(host_addressable(backend));
  EXPECT_FALSE(mirror.copies());
  EXPECT_EQ(mirror.data(), buffer.data());
  EXPECT_EQ(mirror.size(), 5u);
  mirror.pull();
  mirror.push();
  EXPECT_EQ(backend.downloads + backend.uploads, 0);
}

TEST(HostMirror, OnADeviceIsAHostCopyMovedByOneTransferEachWay) {
  CountingBackend backend(loom::DeviceType::cuda);
  const loom::Buffer buffer(backend, 4 * sizeof(float));
  const float start[4] = {1, 2, 3, 4};
  std::memcpy(buffer.data(), start, sizeof start);
  HostMirror mirror(backend, buffer.view(loom::DType::f32, {4}));
  EXPECT_FALSE(host_addressable(backend));
  ASSERT_TRUE(mirror.copies());
  EXPECT_NE(mirror.data(), buffer.data());

  mirror.pull();
  EXPECT_EQ(backend.downloads, 1);
  EXPECT_EQ(std::vector<float>(mirror.data(), mirror.data() + 4), std::vector<float>(start, start + 4));
  for (size_t i = 0; i < mirror.size(); ++i) mirror.data()[i] *= 10;
  mirror.push();
  EXPECT_EQ(backend.uploads, 1);
  EXPECT_EQ(backend.bytes_moved, 2 * sizeof start);
  EXPECT_EQ(static_cast<const float*>(buffer.data())[3], 40.0f);
}

// The backend path of a training step never reads the gradients' host view: a copying mirror
// holds no host memory until something uses it, then exactly the buffer's size.
TEST(HostMirror, AHostCopyIsAllocatedOnFirstUse) {
  CountingBackend backend(loom::DeviceType::cuda);
  const loom::Buffer buffer(backend, 1000 * sizeof(float));
  HostMirror untouched(backend, buffer.view(loom::DType::f32, {1000}));
  EXPECT_TRUE(untouched.copies());
  EXPECT_EQ(untouched.host_bytes(), 0u);
  EXPECT_EQ(backend.downloads + backend.uploads, 0);
  HostMirror pulled(backend, buffer.view(loom::DType::f32, {1000}));
  pulled.pull();
  EXPECT_EQ(pulled.host_bytes(), 1000 * sizeof(float));
  const HostMirror read(backend, buffer.view(loom::DType::f32, {1000}));
  EXPECT_NE(read.data(), nullptr);
  EXPECT_EQ(read.host_bytes(), 1000 * sizeof(float));
  // On a host-addressable backend there is never a copy.
  CountingBackend cpu(loom::DeviceType::cpu);
  const loom::Buffer host_buffer(cpu, 1000 * sizeof(float));
  HostMirror itself(cpu, host_buffer.view(loom::DType::f32, {1000}));
  itself.pull();
  EXPECT_EQ(itself.data(), host_buffer.data());
  EXPECT_EQ(itself.host_bytes(), 0u);
}

TEST(HostMirror, RefusesWhatIsNotAContiguousF32Buffer) {
  CountingBackend backend(loom::DeviceType::cuda);
  const loom::Buffer buffer(backend, 8 * sizeof(float));
  EXPECT_THROW(HostMirror(backend, buffer.view(loom::DType::i32, {8})), std::invalid_argument);
  const loom::Tensor strided = buffer.view(loom::DType::f32, {4, 2}).narrow(1, 0, 1);
  EXPECT_THROW(HostMirror(backend, strided), std::invalid_argument);
}

}  // namespace
}  // namespace loom::host
