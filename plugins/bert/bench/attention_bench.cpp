// loom_attention_bench: forward + backward of one attention layer through a backend's fused
// attention op (loom/sdk/ops/fused_attention.hpp), timed, with the views the encoder layer gives
// it (plugins/bert/src/encoder_layer.cpp): q, k and v are the per-head column blocks of one
// [B·T, 3·H·d] activation in the compute dtype (row stride 3·H·d), ctx a [B·T, H·d] activation
// in the compute dtype, d_ctx f32 [B·T, H·d], dq, dk and dv the per-head column blocks of one f32
// [B·T, 3·H·d] gradient, lse and delta f32 [B, H, T], the key mask f32 [B, T] from
// additive_key_mask. Prints one JSON object (docs/performance.md, "Attention alone"):
//
//   loom_attention_bench [--backend cuda|cpu] [--batch 64] [--heads 16] [--seq 128] [--head-dim 64]
//                        [--dtype bf16|f16|f32] [--dropout 0.1] [--padded-rows 0.5]
//                        [--padded-keys 0.1] [--warmup 3] [--iterations 20]
//                        [--plugin-dir DIR] [--option KEY=VALUE ...]
//
// Plugins: --plugin-dir, else LOOM_PLUGIN_DIR, else lib/loom/plugins when run from an unpacked
// package's lib/loom/gpu-check/, else the build's plugin directory.
// The key-padding mask pads the last floor(padded-keys·T) keys of the last
// round(padded-rows·B) sequences of the batch. Timing: `iterations` forwards, then as many
// backwards (of the last forward), then as many forward + backward pairs, each series ended by
// the backend's synchronize() and timed on the host clock, after `warmup` untimed pairs.
// backend/cpu gets `fused_attention = true` (its reference op), plus any --option.
// Exit 0 with the JSON on stdout; 1 with the reason on stderr when the backend cannot run
// (e.g. backend/cuda without a GPU); 2 on bad usage.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "loom/sdk/backend.hpp"
#include "loom/sdk/component_kind.hpp"
#include "loom/sdk/ops/device_description.hpp"
#include "loom/sdk/ops/fused_attention.hpp"
#include "plugin_loading/plugin_registry.hpp"

namespace {

using loom::DType;
using loom::Tensor;

struct Shape {
  int64_t batch = 64, heads = 16, seq = 128, head_dim = 64;
};

struct Settings {
  std::string backend = "cuda";
  Shape shape;
  std::string dtype = "bf16";
  double dropout = 0.1, padded_rows = 0.5, padded_keys = 0.1;
  int warmup = 3, iterations = 20;
  std::string plugin_dir;
  std::vector<std::string> options;
};

DType parse_dtype(const std::string& name) {
  return name == "f32" ? DType::f32 : name == "f16" ? DType::f16 : DType::bf16;  // checked by CLI11
}

/// A [N, C] activation (unit column stride, row stride r) seen per head: [B, H, T, d] with
/// strides T·r, d, r, 1, as EncoderLayer::heads does.
Tensor heads(const Tensor& x, const Shape& s) {
  const int64_t r = x.strides[0];
  Tensor h = x;
  h.ndim = 4;
  const int64_t shape[4] = {s.batch, s.heads, s.seq, s.head_dim};
  const int64_t strides[4] = {s.seq * r, s.head_dim, r, 1};
  for (int k = 0; k < 4; ++k) h.shape[k] = shape[k], h.strides[k] = strides[k];
  return h;
}

/// Normal random values written to `target` (any dtype) through an f32 staging buffer.
void fill_random(loom::Backend& backend, const Tensor& target, float scale, std::mt19937& rng) {
  std::vector<float> host(static_cast<size_t>(target.numel()));
  std::normal_distribution<float> normal(0.0f, scale);
  for (float& value : host) value = normal(rng);
  if (target.dtype == DType::f32) {
    backend.copy_from_host(target.data, host.data(), host.size() * sizeof(float));
    return;
  }
  loom::Buffer staging(backend, host.size() * sizeof(float));
  backend.copy_from_host(staging.data(), host.data(), host.size() * sizeof(float));
  Tensor source = target;
  source.data = staging.data();
  source.dtype = DType::f32;
  backend.cast(source, target);
  backend.synchronize();  // the staging buffer is freed on return
}

/// Milliseconds per call of `body`, over `iterations` calls ended by one synchronize().
template <typename Body>
double time_ms(loom::Backend& backend, int iterations, Body&& body) {
  backend.synchronize();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iterations; ++i) body();
  backend.synchronize();
  const std::chrono::duration<double, std::milli> elapsed = std::chrono::steady_clock::now() - start;
  return elapsed.count() / iterations;
}

/// LOOM_PLUGIN_DIR when set; else lib/loom/plugins of the unpacked package when this program is its
/// lib/loom/gpu-check/loom_attention_bench; else the build's plugin directory.
std::string default_plugin_dir() {
  const char* variable = std::getenv("LOOM_PLUGIN_DIR");
  if (variable != nullptr && *variable != '\0') return variable;
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  const std::filesystem::path package = self.parent_path().parent_path() / "plugins";
  if (!error && self.parent_path().filename() == "gpu-check" && std::filesystem::is_directory(package, error))
    return package.string();
  return LOOM_PLUGIN_DIR;
}

nlohmann::json run(const Settings& settings) {
  loom::host::PluginSearchOptions search;
  search.directories = {settings.plugin_dir};
  search.default_paths = false;
  search.environment = false;
  const loom::host::PluginRegistry registry(search);
  const loom::host::ComponentEntry* entry = registry.find(LOOM_KIND_BACKEND, settings.backend);
  if (entry == nullptr)
    throw std::runtime_error("no backend/" + settings.backend + " among the plugins in " +
                             settings.plugin_dir);
  loom::host::ComponentConfig config;
  config.table_name = "backend";
  config.table_origin = "loom_attention_bench --option";  // where an option error points
  if (settings.backend == "cpu") config.toml = "fused_attention = true\n";
  for (const std::string& option : settings.options) config.toml += option + "\n";
  const loom::host::Component<loom::Backend> component =
      registry.create<loom::Backend>(*entry, config, false);
  loom::Backend& backend = *component.get();
  loom::FusedAttention* attention = component.find<loom::FusedAttention>();
  if (attention == nullptr) throw std::runtime_error(component.name() + " does not offer fused attention");

  const Shape& s = settings.shape;
  const DType dtype = parse_dtype(settings.dtype);
  const int64_t N = s.batch * s.seq, C = s.heads * s.head_dim;
  const size_t c_size = loom::dtype_size(dtype);
  loom::Buffer qkv_buffer(backend, static_cast<size_t>(N * 3 * C) * c_size),
      ctx_buffer(backend, static_cast<size_t>(N * C) * c_size),
      d_ctx_buffer(backend, static_cast<size_t>(N * C) * 4),
      d_qkv_buffer(backend, static_cast<size_t>(N * 3 * C) * 4),
      lse_buffer(backend, static_cast<size_t>(s.batch * s.heads * s.seq) * 4),
      delta_buffer(backend, static_cast<size_t>(s.batch * s.heads * s.seq) * 4),
      mask_buffer(backend, static_cast<size_t>(s.batch * s.seq) * 4),
      key_mask_buffer(backend, static_cast<size_t>(s.batch * s.seq) * 4);
  const Tensor qkv = qkv_buffer.view(dtype, {N, 3 * C}), d_qkv = d_qkv_buffer.view(DType::f32, {N, 3 * C});
  const Tensor ctx = ctx_buffer.view(dtype, {N, C}), d_ctx = d_ctx_buffer.view(DType::f32, {N, C});
  const Tensor lse = lse_buffer.view(DType::f32, {s.batch, s.heads, s.seq});
  const Tensor delta = delta_buffer.view(DType::f32, {s.batch, s.heads, s.seq});
  const Tensor key_mask = key_mask_buffer.view(DType::f32, {s.batch, s.seq});

  std::mt19937 rng(1);
  fill_random(backend, qkv, 1.0f, rng);
  fill_random(backend, d_ctx, 1.0f, rng);
  // The outputs start as NaN, so that a kernel that writes nothing shows in the check below.
  backend.fill(lse, std::numeric_limits<double>::quiet_NaN());
  backend.fill(d_qkv, std::numeric_limits<double>::quiet_NaN());
  const int64_t padded_rows = std::llround(settings.padded_rows * static_cast<double>(s.batch));
  const int64_t padded_keys =
      static_cast<int64_t>(std::floor(settings.padded_keys * static_cast<double>(s.seq)));
  std::vector<int32_t> mask(static_cast<size_t>(s.batch * s.seq), 1);
  for (int64_t b = s.batch - padded_rows; b < s.batch; ++b)
    for (int64_t t = s.seq - padded_keys; t < s.seq; ++t) mask[static_cast<size_t>(b * s.seq + t)] = 0;
  backend.copy_from_host(mask_buffer.data(), mask.data(), mask.size() * sizeof(int32_t));
  backend.additive_key_mask(mask_buffer.view(DType::i32, {s.batch, s.seq}), key_mask);

  const Tensor q = heads(qkv.narrow(1, 0, C), s), k = heads(qkv.narrow(1, C, C), s),
               v = heads(qkv.narrow(1, 2 * C, C), s);
  const Tensor dq = heads(d_qkv.narrow(1, 0, C), s), dk = heads(d_qkv.narrow(1, C, C), s),
               dv = heads(d_qkv.narrow(1, 2 * C, C), s);
  const Tensor ctx_heads = heads(ctx, s), d_ctx_heads = heads(d_ctx, s);
  const float scale = 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  const auto p = static_cast<float>(settings.dropout);
  const uint64_t seed = 12345;
  const auto forward = [&] {
    attention->attention_forward(q, k, v, key_mask, scale, p, seed, 0, ctx_heads, lse);
  };
  const auto backward = [&] {
    attention->attention_backward(d_ctx_heads, q, k, v, ctx_heads, lse, key_mask, scale, p, seed, 0, dq, dk,
                                  dv, delta);
  };

  for (int i = 0; i < settings.warmup; ++i) forward(), backward();
  const double forward_ms = time_ms(backend, settings.iterations, forward);
  const double backward_ms = time_ms(backend, settings.iterations, backward);
  const double both_ms = time_ms(backend, settings.iterations, [&] { forward(), backward(); });

  // A check that the results are numbers: every lse, and the first and last rows of dq, dk, dv
  // (the last in a padded sequence); they started as NaN.
  std::vector<float> lse_all(static_cast<size_t>(lse.numel())), first_row(static_cast<size_t>(3 * C)),
      last_row(first_row.size());
  backend.copy_to_host(lse_all.data(), lse.data, lse_all.size() * sizeof(float));
  backend.copy_to_host(first_row.data(), d_qkv.data, first_row.size() * sizeof(float));
  backend.copy_to_host(last_row.data(), static_cast<const float*>(d_qkv.data) + (N - 1) * 3 * C,
                       last_row.size() * sizeof(float));
  bool finite = true;
  for (const auto* values : {&lse_all, &first_row, &last_row})
    for (const float value : *values) finite = finite && std::isfinite(value);

  nlohmann::json result = {
      {"program", "loom_attention_bench"},
      {"backend", component.name()},
      {"batch", s.batch},
      {"heads", s.heads},
      {"seq", s.seq},
      {"head_dim", s.head_dim},
      {"dtype", settings.dtype},
      {"gradient_dtype", "f32"},
      {"dropout", settings.dropout},
      {"padded_rows", padded_rows},
      {"padded_keys_per_padded_row", padded_keys},
      {"fused_attention_recommended", attention->fused_attention(s.head_dim, s.seq)},
      {"warmup", settings.warmup},
      {"iterations", settings.iterations},
      {"ms_forward_backward", both_ms},
      {"ms_forward", forward_ms},
      {"ms_backward", backward_ms},
      {"finite", finite},
      {"device", nullptr},
  };
  if (const auto* description = component.find<loom::DeviceDescription>()) {
    const loom::DeviceInfo info = description->device_info();
    result["device"] = std::string(info.name);
    result["peak_allocated_bytes"] = info.peak_allocated_bytes;
  }
  return result;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Time forward + backward of one attention layer through a backend's fused attention op"};
  Settings settings;
  settings.plugin_dir = default_plugin_dir();
  app.add_option("--backend", settings.backend, "backend component: cuda or cpu")->capture_default_str();
  app.add_option("--batch", settings.shape.batch, "sequences")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--heads", settings.shape.heads, "attention heads")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--seq", settings.shape.seq, "sequence length")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--head-dim", settings.shape.head_dim, "head dimension")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--dtype", settings.dtype, "storage of q, k, v and ctx")
      ->capture_default_str()
      ->check(CLI::IsMember({"bf16", "f16", "f32"}));
  app.add_option("--dropout", settings.dropout, "attention dropout probability")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 0.99));
  app.add_option("--padded-rows", settings.padded_rows, "share of the sequences with padded keys")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--padded-keys", settings.padded_keys, "share of the keys padded in such a sequence")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--warmup", settings.warmup, "untimed forward + backward pairs first")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--iterations", settings.iterations, "timed calls per series")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option(
      "--plugin-dir", settings.plugin_dir,
      "directory of the backend plugins (default: LOOM_PLUGIN_DIR, else the package's or the build's)");
  app.add_option("--option", settings.options,
                 "a backend option as TOML, KEY=VALUE (e.g. threads=2, device=1)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& error) {
    return app.exit(error) == 0 ? 0 : 2;  // --help: 0
  }
  try {
    std::cout << run(settings).dump(2) << "\n";
  } catch (const std::exception& error) {
    std::cerr << "loom_attention_bench: " << error.what() << "\n";
    return 1;
  }
  return 0;
}
