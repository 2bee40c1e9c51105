// The account of device memory by class (memory_account.hpp) for a small pre-training BERT:
// every class the host lays out has its closed-form size — parameters = elements × compute dtype
// size, master weights = elements × 4 beside a 16-bit copy, moments = 2 × elements × 4, gradients
// = elements × 4, attention's saved state = per layer q, k, v, the log-sum-exp (fused) or the
// probabilities (unfused) and the context — and on backend/cpu-opaque, whose every allocation the
// host makes, the classes sum to exactly what its allocator reports as requested, live and at the
// peak, after training steps (forward, backward, the optimizer on the backend): nothing is left
// out and nothing is counted twice.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "loom/sdk/ops/memory_usage.hpp"
#include "model/batch_staging.hpp"
#include "model/model.hpp"
#include "plugin_loading/plugin_test_support.hpp"
#include "train/backend_update.hpp"
#include "train/loss_sums.hpp"
#include "train/memory_account.hpp"

namespace loom::host {
namespace {

template <typename Interface>
Component<Interface> create(const PluginRegistry& registry, const char* name, const std::string& toml) {
  const auto* entry = registry.find(Interface::kKind, name);
  if (entry == nullptr) throw std::runtime_error(std::string("no component ") + name);
  return registry.create<Interface>(*entry, {Interface::kRecipeTable, toml, "", "test.toml:1:1"}, false);
}

PluginRegistry test_registry() {
  return PluginRegistry(testing::hermetic({testing::fixture_dir("opaque_backend"), LOOM_PLUGIN_DIR}));
}

loom::ModelConfig small_config() {
  loom::ModelConfig c = loom::default_model_config();
  c.vocab_size = 61;
  c.hidden_size = 32;
  c.num_hidden_layers = 2;
  c.num_attention_heads = 4;
  c.intermediate_size = 48;
  c.max_position_embeddings = 32;
  c.type_vocab_size = 2;
  return c;
}

std::vector<std::string> pretraining_blocks() {
  return {"bert.embeddings", "bert.encoder-layer", "bert.encoder-layer", "bert.pretraining-heads"};
}

size_t aligned(size_t bytes) {
  return (bytes + loom::Backend::kAlignment - 1) / loom::Backend::kAlignment * loom::Backend::kAlignment;
}

constexpr loom::ActivationShape kShape{3, 16, 12};

TEST(MemoryAccount, EachClassHasItsClosedFormSize) {
  const PluginRegistry registry = test_registry();
  const loom::ModelConfig config = small_config();
  const int64_t B = kShape.batch, T = kShape.seq, N = B * T, H = config.hidden_size,
                heads = config.num_attention_heads, layers = config.num_hidden_layers;
  for (const bool fused : {true, false})
    for (const loom::DType compute : {loom::DType::f32, loom::DType::bf16}) {
      SCOPED_TRACE(std::string(fused ? "fused" : "unfused") + " attention, " + loom::dtype_name(compute));
      const Component<loom::Backend> backend =
          create<loom::Backend>(registry, "cpu", fused ? "fused_attention = true\n" : "");
      const Model model(registry, pretraining_blocks(), config, backend, compute);
      const size_t total = model.parameters().total_elements();
      ASSERT_GE(total, model.parameters().parameter_count());
      const size_t c = compute == loom::DType::f32 ? 4 : 2;

      const MemoryAccount with_state = account_device_memory(model, kShape, 2, true);
      EXPECT_EQ(with_state.parameters, total * c);
      EXPECT_EQ(with_state.master_weights, compute == loom::DType::f32 ? 0 : total * 4);
      EXPECT_EQ(with_state.optimizer_state, 2 * total * 4);
      EXPECT_EQ(with_state.gradients, total * 4);
      const size_t probabilities_or_lse = fused ? aligned(static_cast<size_t>(B * heads * T) * 4)
                                                : aligned(static_cast<size_t>(B * heads * T * T) * c);
      const size_t per_layer = aligned(static_cast<size_t>(N * 3 * H) * c) + probabilities_or_lse +
                               aligned(static_cast<size_t>(N * H) * c);
      EXPECT_EQ(with_state.saved_attention, static_cast<size_t>(layers) * per_layer);
      EXPECT_EQ(with_state.batch, BatchStaging::device_bytes(kShape));

      // The arena's parts are the saved and working classes, and the host path keeps no state there.
      const ArenaBytes arena = model.arena_bytes_for(kShape);
      const MemoryAccount host_path = account_device_memory(model, kShape, 0, false);
      EXPECT_EQ(host_path.optimizer_state, 0u);
      EXPECT_EQ(host_path.saved_activations + host_path.saved_attention, arena.block_outputs + arena.saved);
      EXPECT_EQ(host_path.workspaces,
                arena.scratch + arena.activation_gradients + arena.loss + LossSums::kDeviceBytes);
      EXPECT_EQ(with_state.workspaces, host_path.workspaces + BackendUpdate::kFlagBytes);
      // One f32 [N, H] per block boundary the next block's backward reads (every one in f32
      // compute); in 16-bit compute no BERT block reads its input in backward (BackwardInput), and
      // the layers + 1 boundaries take two buffers used in turn, and each of the layers − 1
      // boundaries between two encoder layers keeps the 16-bit copy one hands the other
      // (HiddenCopy) — which the later layer's saved bytes no longer hold.
      const size_t boundary_buffers = compute == loom::DType::f32 ? static_cast<size_t>(layers + 1) : 2;
      const size_t handed_copies = compute == loom::DType::f32 ? 0 : static_cast<size_t>(layers - 1);
      EXPECT_EQ(arena.block_outputs, boundary_buffers * aligned(static_cast<size_t>(N * H) * 4) +
                                         handed_copies * aligned(static_cast<size_t>(N * H) * c));
      EXPECT_EQ(arena.activation_gradients, 2 * aligned(static_cast<size_t>(N * H) * 4));
      EXPECT_EQ(with_state.total(), host_path.total() + 2 * total * 4 + BackendUpdate::kFlagBytes);
    }
}

// A pre-training batch of kShape's size with a padded row and a few masked positions.
struct Batch {
  std::vector<int32_t> ids, mask, mlm_labels, nsp;
  explicit Batch(const loom::ModelConfig& config) {
    std::mt19937 rng(11);
    std::uniform_int_distribution<int32_t> token(1, config.vocab_size - 1);
    for (int64_t r = 0; r < kShape.batch; ++r)
      for (int64_t t = 0; t < kShape.seq; ++t) {
        const bool real = r != 1 || t < 11;
        ids.push_back(real ? token(rng) : 0);
        mask.push_back(real ? 1 : 0);
        mlm_labels.push_back(real && t % 5 == 2 ? token(rng) : -100);
      }
    nsp = {0, 1, 0};
  }
  HostBatch view() const {
    HostBatch v;
    v.batch = kShape.batch;
    v.seq = kShape.seq;
    v.input_ids = ids.data();
    v.attention_mask = mask.data();
    v.mlm_labels = mlm_labels.data();
    v.next_sentence_labels = nsp.data();
    return v;
  }
};

TEST(MemoryAccount, SumsToWhatBackendCpuOpaqueAllocatesForTrainingSteps) {
  const PluginRegistry registry = test_registry();
  const loom::ModelConfig config = small_config();
  RunComponents c;
  c.backend = create<loom::Backend>(registry, "cpu-opaque", "threads = 1\n");
  c.optimizer = create<loom::Optimizer>(registry, "nvlamb", "lr = 0.01\n");
  c.precision = create<loom::Precision>(registry, "bf16-mixed", "");
  const loom::MemoryUsage* usage = c.backend.find<loom::MemoryUsage>();
  ASSERT_NE(usage, nullptr) << "backend/cpu-opaque reports its allocations";
  loom::Backend& backend = *c.backend.get();
  size_t optimizer_state = 0;
  {
    Model model(registry, pretraining_blocks(), config, c.backend, loom::DType::bf16);
    model.reserve(kShape);
    BatchStaging staging(backend, kShape);
    LossSums loss_sums(backend);
    const auto segments = model.parameters().segments();
    c.optimizer.get()->setup(segments.data(), segments.size(), model.parameters().total_elements());
    const std::unique_ptr<BackendUpdate> update = BackendUpdate::attach_if_offered(c, model, 1);
    ASSERT_NE(update, nullptr);
    model.initialize(5);
    const Batch batch(config);
    for (uint64_t step = 0; step < 2; ++step) {
      model.zero_grads();
      model.forward(staging.upload(batch.view()), StepSettings{true, step + 1});
      loss_sums.add(model);
      model.backward(1.0f);
      if (update->decide().apply) update->update({0.01, 1.0});
    }
    const size_t state_tensors = c.optimizer.get()->num_state_tensors();
    EXPECT_EQ(state_tensors, 2u) << "NVLAMB keeps two moments";
    const MemoryAccount account = account_device_memory(model, kShape, state_tensors, true);
    const loom::MemoryUsageBytes used = usage->memory_usage();
    EXPECT_EQ(used.requested, account.total()) << memory_account_table(account, &used, "  ");
    EXPECT_EQ(used.peak_requested, account.total()) << "a transient allocation the account does not show";
    EXPECT_GE(used.allocated, used.requested);
    EXPECT_LT(used.allocated - used.requested, 64u * 16) << "backend/cpu rounds each allocation to 64 bytes";
    EXPECT_EQ(memory_account_json(account, &used)["backend_own"], 0);
    optimizer_state = account.optimizer_state;
  }
  EXPECT_EQ(usage->memory_usage().requested, optimizer_state)
      << "the model, its batch and the step's buffers were given back; the optimizer holds its moments";
}

}  // namespace
}  // namespace loom::host
