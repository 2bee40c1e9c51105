// ModernBERT's config.json keys; see modern_config.hpp.
#include "modern_config.hpp"

namespace loom_modernbert {
namespace {

loom::Gelu gelu_named(const loom_blocks::ConfigKeys& file, const char* key) {
  const std::string name = file.text(key, "gelu");
  if (name == "gelu") return loom::Gelu::erf;
  if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_fast") return loom::Gelu::tanh;
  file.refuse(key, "unsupported activation \"" + name +
                       "\"; use \"gelu\" (erf) or \"gelu_new\" / \"gelu_pytorch_tanh\" / \"gelu_fast\" (tanh)");
}

float dropout(const loom_blocks::ConfigKeys& file, const char* key) {
  return static_cast<float>(file.real(key, 0.0, 0.0, 1.0));
}

// rope_parameters[kind].rope_theta, refusing any rope_type but "default" (no scaling).
double rope_theta(const loom_blocks::ConfigKeys& file, const char* kind, double fallback) {
  const nlohmann::json& all = file.json()["rope_parameters"];
  if (!all.is_object()) file.refuse("rope_parameters", "expected an object keyed by attention kind");
  if (!all.contains(kind)) return fallback;
  const nlohmann::json& entry = all[kind];
  const std::string key = std::string("rope_parameters.") + kind;
  if (!entry.is_object()) file.refuse(key, "expected an object, got " + entry.dump());
  if (entry.contains("rope_type") && entry["rope_type"] != "default")
    file.refuse(key + ".rope_type", "only \"default\" rotary embeddings are implemented, got " +
                                        entry["rope_type"].dump());
  if (!entry.contains("rope_theta")) return fallback;
  if (!entry["rope_theta"].is_number() || !(entry["rope_theta"].get<double>() > 0.0))
    file.refuse(key + ".rope_theta", "expected a positive number, got " + entry["rope_theta"].dump());
  return entry["rope_theta"].get<double>();
}

}  // namespace

ModernConfig read_modern_config(const loom_blocks::ConfigKeys& file, const loom::ModelConfig& shared) {
  if (file.has("model_type") && file.text("model_type", "") != "modernbert")
    file.refuse("model_type", "expected \"modernbert\", got \"" + file.text("model_type", "") +
                                  "\" (a config of another family needs that family's blocks)");
  ModernConfig c;
  c.norm_eps = file.real("norm_eps", 1e-5, 1e-30, 1.0);
  c.norm_bias = file.boolean("norm_bias", false);
  c.attention_bias = file.boolean("attention_bias", false);
  c.mlp_bias = file.boolean("mlp_bias", false);
  c.classifier_bias = file.boolean("classifier_bias", false);
  c.decoder_bias = file.boolean("decoder_bias", true);
  c.hidden_activation = gelu_named(file, "hidden_activation");
  c.classifier_activation = gelu_named(file, "classifier_activation");
  c.local_attention = file.integer("local_attention", 128, 0);
  c.embedding_dropout = dropout(file, "embedding_dropout");
  c.attention_dropout = dropout(file, "attention_dropout");
  c.mlp_dropout = dropout(file, "mlp_dropout");
  c.classifier_dropout = dropout(file, "classifier_dropout");
  const std::string pooling = file.text("classifier_pooling", "cls");
  if (pooling != "cls" && pooling != "mean")
    file.refuse("classifier_pooling", "expected \"cls\" or \"mean\", got \"" + pooling + "\"");
  c.mean_pooling = pooling == "mean";
  if (file.boolean("tie_word_embeddings", true) == false)
    file.refuse("tie_word_embeddings", "false is not implemented: the decoder shares the token embeddings");
  if (shared.hidden_size / shared.num_attention_heads % 2 != 0)
    file.refuse("num_attention_heads", "rotary embeddings need an even head size, hidden_size / "
                                       "num_attention_heads = " +
                                           std::to_string(shared.hidden_size / shared.num_attention_heads));

  const int64_t layers = shared.num_hidden_layers;
  if (file.has("layer_types")) {
    const nlohmann::json& types = file.json()["layer_types"];
    if (!types.is_array() || static_cast<int64_t>(types.size()) != layers)
      file.refuse("layer_types", "expected a list of " + std::to_string(layers) + " attention kinds");
    for (const nlohmann::json& type : types) {
      if (type != "full_attention" && type != "sliding_attention")
        file.refuse("layer_types", "expected \"full_attention\" or \"sliding_attention\", got " + type.dump());
      c.global_layers.push_back(type == "full_attention");
    }
  } else {
    const int64_t every = file.integer("global_attn_every_n_layers", 3, 1);
    for (int64_t i = 0; i < layers; ++i) c.global_layers.push_back(i % every == 0);
  }
  const auto positive = [&](const char* key, double fallback) {
    const double theta = file.real(key, fallback, 0.0, 1e300);
    if (!(theta > 0.0)) file.refuse(key, "must be positive");
    return theta;
  };
  c.global_rope_theta = positive("global_rope_theta", 160000.0);
  c.local_rope_theta = positive("local_rope_theta", 10000.0);
  if (file.has("rope_parameters")) {
    c.global_rope_theta = rope_theta(file, "full_attention", c.global_rope_theta);
    c.local_rope_theta = rope_theta(file, "sliding_attention", c.local_rope_theta);
  }
  if (file.has("rope_scaling")) file.refuse("rope_scaling", "scaled rotary embeddings are not implemented");
  return c;
}

}  // namespace loom_modernbert
