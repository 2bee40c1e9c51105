// BERT weights ↔ Hugging Face safetensors: name matching, tie handling, missing/unexpected
// reporting (contract in bert_checkpoint.hpp). Loading validates everything first and writes
// parameters only when the whole file is acceptable.
#include "checkpoint/bert_checkpoint.hpp"

#include <algorithm>
#include <cstring>
#include <set>
#include <sstream>

namespace loom::host {
namespace {

// Ties Hugging Face's BertLMPredictionHead always has (decoder.bias is the same tensor as bias
// since transformers 2.x); torch.save writes both names, save_pretrained only the target.
const CheckpointAlias kBuiltInTies[] = {
    kBertDecoderTie,
    {"cls.predictions.decoder.bias", "cls.predictions.bias"},
};

// Buffers BertEmbeddings registers; older transformers versions saved them with the weights.
const char* const kEmbeddingBuffers[] = {"bert.embeddings.position_ids", "bert.embeddings.token_type_ids"};

bool ends_with(const std::string& text, const std::string& suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.rfind(prefix, 0) == 0;
}

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string text = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + "]";
}

bool is_float_dtype(SafetensorsDtype dtype) {
  return dtype == SafetensorsDtype::kF32 || dtype == SafetensorsDtype::kF16 ||
         dtype == SafetensorsDtype::kBF16 || dtype == SafetensorsDtype::kF64;
}

// The name a file tensor has in Loom's (current Hugging Face) spelling.
std::string canonical_name(std::string name, bool add_bert_prefix) {
  if (ends_with(name, ".gamma")) name = name.substr(0, name.size() - 6) + ".weight";
  if (ends_with(name, ".beta")) name = name.substr(0, name.size() - 5) + ".bias";
  if (add_bert_prefix &&
      (starts_with(name, "embeddings.") || starts_with(name, "encoder.") || starts_with(name, "pooler.")))
    name = "bert." + name;
  return name;
}

void append_list(std::ostringstream& out, const char* title, const std::vector<std::string>& names) {
  if (names.empty()) return;
  out << "\n  " << title << " (" << names.size() << "):";
  for (const auto& name : names) out << "\n    " << name;
}

}  // namespace

std::string CheckpointLoadReport::summary() const {
  std::ostringstream out;
  out << loaded.size() << " loaded, " << missing.size() << " missing, " << unexpected.size()
      << " unexpected, " << ignored.size() << " ignored, " << renamed.size() << " renamed";
  append_list(out, "missing", missing);
  append_list(out, "unexpected", unexpected);
  append_list(out, "ignored", ignored);
  append_list(out, "renamed", renamed);
  return out.str();
}

CheckpointLoadReport load_bert_checkpoint(const SafetensorsFile& file,
                                          std::span<const CheckpointTensor> parameters,
                                          std::span<const CheckpointAlias> aliases,
                                          const CheckpointLoadOptions& options) {
  CheckpointLoadReport report;
  std::vector<std::string> problems;

  std::map<std::string, const CheckpointTensor*> by_name;
  for (const auto& parameter : parameters) by_name[parameter.name] = &parameter;
  // Aliases the model knows (its own plus Hugging Face's built-in ties whose target it has).
  std::map<std::string, std::string> alias_target;
  for (const auto& alias : aliases) alias_target[alias.name] = alias.target;
  for (const auto& tie : kBuiltInTies)
    if (by_name.count(tie.target)) alias_target.emplace(tie.name, tie.target);
  for (const auto& [alias, target] : alias_target) by_name.erase(alias);  // an alias owns no storage

  // Index the file under Loom spellings.
  const bool file_has_bert_prefix = std::any_of(file.tensors().begin(), file.tensors().end(),
                                                [](const auto& t) { return starts_with(t.name, "bert."); });
  const bool model_has_bert_prefix = std::any_of(
      by_name.begin(), by_name.end(), [](const auto& entry) { return starts_with(entry.first, "bert."); });
  std::map<std::string, const SafetensorsTensor*> in_file;
  for (const auto& tensor : file.tensors()) {
    std::string name = canonical_name(tensor.name, model_has_bert_prefix && !file_has_bert_prefix);
    if (name != tensor.name) report.renamed.push_back(tensor.name + " -> " + name);
    if (!in_file.emplace(name, &tensor).second)
      problems.push_back("two tensors map to \"" + name + "\" (\"" + in_file[name]->name + "\" and \"" +
                         tensor.name + "\")");
  }
  std::set<std::string> consumed;

  // Every parameter: its own tensor, or a tied alias standing in for it.
  std::vector<std::pair<const CheckpointTensor*, const SafetensorsTensor*>> plan;
  for (const auto& parameter : parameters) {
    if (!by_name.count(parameter.name)) continue;
    const SafetensorsTensor* source = nullptr;
    std::string source_name = parameter.name;
    if (auto it = in_file.find(parameter.name); it != in_file.end()) {
      source = it->second;
    } else {
      for (const auto& [alias, target] : alias_target) {
        if (target != parameter.name) continue;
        if (auto stand_in = in_file.find(alias); stand_in != in_file.end()) {
          source = stand_in->second;
          source_name = alias;
          report.renamed.push_back(alias + " -> " + parameter.name + " (tied; the file has only the alias)");
          break;
        }
      }
    }
    if (source == nullptr) {
      report.missing.push_back(parameter.name);
      const bool allowed =
          std::any_of(options.may_be_missing_prefixes.begin(), options.may_be_missing_prefixes.end(),
                      [&](const std::string& prefix) { return starts_with(parameter.name, prefix); });
      if (!allowed)
        problems.push_back("missing parameter \"" + parameter.name + "\" " + shape_text(parameter.shape));
      continue;
    }
    consumed.insert(source_name);
    if (source->shape != parameter.shape) {
      problems.push_back("\"" + source->name + "\" has shape " + shape_text(source->shape) +
                         " but the model's \"" + parameter.name + "\" is " + shape_text(parameter.shape));
      continue;
    }
    if (!is_float_dtype(source->dtype)) {
      problems.push_back("\"" + source->name + "\" has dtype " +
                         std::string(safetensors_dtype_name(source->dtype)) +
                         "; parameters must be F32, F16, BF16 or F64");
      continue;
    }
    plan.emplace_back(&parameter, source);
  }

  // Tied copies the file carries besides their target must equal it.
  for (const auto& [alias, target] : alias_target) {
    auto copy = in_file.find(alias);
    if (copy == in_file.end() || consumed.count(alias)) continue;
    auto original = in_file.find(target);
    if (original == in_file.end()) continue;  // target missing: reported above
    consumed.insert(alias);
    const auto a = file.read_f32(copy->second->name);
    const auto b = file.read_f32(original->second->name);
    // Bitwise: a tied pair is one tensor written twice (NaN == NaN here, unlike operator==).
    if (a.size() != b.size() ||
        (!a.empty() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) != 0))
      problems.push_back("\"" + copy->second->name + "\" differs from \"" + original->second->name +
                         "\"; Loom ties them, so an untied checkpoint cannot be loaded");
    else
      report.ignored.push_back(copy->second->name + " (tied copy of " + target + ", identical)");
  }

  for (const auto& [name, tensor] : in_file) {
    if (consumed.count(name)) continue;
    if (std::find(std::begin(kEmbeddingBuffers), std::end(kEmbeddingBuffers), name) !=
        std::end(kEmbeddingBuffers)) {
      report.ignored.push_back(tensor->name + " (Hugging Face buffer, not a parameter)");
      continue;
    }
    report.unexpected.push_back(tensor->name);
    if (!options.allow_unexpected)
      problems.push_back("unexpected tensor \"" + tensor->name + "\" " + shape_text(tensor->shape) +
                         " (the model has no such parameter)");
  }

  if (!problems.empty()) {
    std::string message = file.source() + ": checkpoint does not fit the model (" +
                          std::to_string(problems.size()) + " problem" + (problems.size() == 1 ? "" : "s") +
                          "):";
    for (const auto& problem : problems) message += "\n  " + problem;
    throw CheckpointError(message);
  }
  for (const auto& [parameter, source] : plan) {
    const auto values = file.read_f32(source->name);
    std::copy(values.begin(), values.end(), parameter->data);
    report.loaded.push_back(parameter->name);
  }
  return report;
}

void save_bert_checkpoint(const std::filesystem::path& path, std::span<const CheckpointTensor> parameters,
                          std::span<const CheckpointAlias> aliases,
                          const std::map<std::string, std::string>& metadata) {
  std::set<std::string> alias_names;
  for (const auto& alias : aliases) alias_names.insert(alias.name);
  SafetensorsWriter writer;
  for (const auto& parameter : parameters) {
    if (alias_names.count(parameter.name)) continue;
    std::int64_t count = 1;
    for (std::int64_t extent : parameter.shape) count *= extent;
    writer.add_f32(parameter.name, parameter.shape,
                   std::span<const float>(parameter.data, static_cast<std::size_t>(count)));
  }
  for (const auto& [key, value] : metadata) writer.set_metadata(key, value);
  writer.set_metadata("format", "pt");
  writer.write(path);
}

}  // namespace loom::host
