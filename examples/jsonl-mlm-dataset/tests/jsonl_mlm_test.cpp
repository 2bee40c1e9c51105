// dataset/jsonl-mlm with the installed WordPiece tokenizer plugin (loaded as the host loads it):
// BERT row layout, labels that restore the text, the masking rate, resumable order, ranks that
// cover every line once per epoch, and errors that name the file and line.
#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "loom/sdk/dataset.hpp"
#include "loom/sdk/plugin_abi.h"
#include "loom/sdk/tokenizer.hpp"

extern "C" const loom_plugin_desc* loom_plugin_query(void) noexcept;

namespace {

int failures = 0;
void check(bool ok, const std::string& what) {
  if (!ok) {
    std::printf("FAIL: %s\n", what.c_str());
    ++failures;
  }
}

void* create(const loom_component_desc& component, const std::string& toml, const char* table, std::string& message) {
  loom_create_args args{};
  args.struct_size = sizeof(args);
  args.config_toml = toml.data();
  args.config_length = toml.size();
  args.config_origins = "";
  args.table_origin = "test.toml:1:1";
  args.table_name = table;
  char text[4096] = {0};
  loom_error_buffer error{text, sizeof(text)};
  void* object = nullptr;
  const loom_status status = component.create(&args, &object, &error);
  message = text;
  return status == LOOM_OK ? object : nullptr;
}

const std::vector<std::string> kWords = {"river", "stone", "light", "north", "garden", "winter", "signal", "harbor",
                                         "copper", "meadow", "lantern", "orbit", "canyon", "violet", "thunder"};

struct Batch {
  loom::BatchShape shape;
  std::vector<int32_t> ids, types, mask, labels, positions, masked_ids, nsp;
  std::vector<uint64_t> instances;
};

Batch next(loom::Dataset& data) {
  const loom::BatchLimits l = data.limits();
  Batch b;
  const size_t cells = static_cast<size_t>(l.batch_size) * static_cast<size_t>(l.max_seq_length);
  const size_t predictions = static_cast<size_t>(l.batch_size) * static_cast<size_t>(l.max_predictions);
  b.ids.assign(cells, -7), b.types.assign(cells, -7), b.mask.assign(cells, -7), b.labels.assign(cells, -7);
  b.positions.assign(predictions, -7), b.masked_ids.assign(predictions, -7), b.nsp.assign(l.batch_size, -7);
  b.instances.assign(l.batch_size, 0);
  loom::BatchBuffers out{b.ids.data(),       b.types.data(),      b.mask.data(), b.labels.data(),
                         b.positions.data(), b.masked_ids.data(), b.nsp.data(),  nullptr,
                         nullptr,            nullptr,             b.instances.data()};
  b.shape = data.next_batch(out);
  return b;
}

}  // namespace

int main() {
  const std::string dir = std::string(std::getenv("TMPDIR") ? std::getenv("TMPDIR") : "/tmp") + "/jsonl-mlm-test-" +
                          std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  {
    std::ofstream vocab(dir + "/vocab.txt");
    vocab << "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n";
    for (const std::string& w : kWords) vocab << w << "\n";
  }
  {
    std::ofstream lines(dir + "/train.jsonl");
    for (int i = 0; i < 101; ++i) {
      std::string text;
      for (int k = 0; k < 5 + (i * 7) % 23; ++k) text += (k ? " " : "") + kWords[(i * 3 + k * k) % kWords.size()];
      lines << "{\"id\": " << i << ", \"text\": \"" << text << "\"}\n";
      if (i % 10 == 0) lines << "\n";  // blank lines are skipped
    }
    std::ofstream bad(dir + "/bad.jsonl");
    bad << "{\"text\": \"river\"}\n{\"text\": \"stone\"}\n{\"body\": \"light\"}\n";
  }

  void* wordpiece = dlopen(LOOM_INSTALLED_PLUGIN_DIR "/libloom-wordpiece.so", RTLD_NOW | RTLD_LOCAL);
  if (wordpiece == nullptr) {
    std::printf("FAIL: cannot load the installed WordPiece plugin: %s\n", dlerror());
    return 1;
  }
  auto query = reinterpret_cast<loom_plugin_query_fn>(dlsym(wordpiece, LOOM_PLUGIN_ENTRY_SYMBOL));
  const loom_plugin_desc* wp = query();
  const loom_component_desc* tokenizer_desc = nullptr;
  for (uint32_t i = 0; i < wp->num_components; ++i)
    if (wp->components[i].kind == LOOM_KIND_TOKENIZER) tokenizer_desc = &wp->components[i];
  std::string message;
  auto* tokenizer = static_cast<loom::Tokenizer*>(
      create(*tokenizer_desc, "vocab = \"" + dir + "/vocab.txt\"\n", "tokenizer", message));
  check(tokenizer != nullptr, "tokenizer: " + message);
  if (tokenizer == nullptr) return 1;
  const loom::SpecialTokenIds special = tokenizer->special_token_ids();
  const loom_component_desc& jsonl = loom_plugin_query()->components[0];
  const std::string options = "file = \"" + dir + "/train.jsonl\"\nbatch_size = 8\nmax_seq_length = 24\n";
  auto open = [&](const std::string& toml, int rank, int world, const loom::Tokenizer* tok) {
    auto* data = static_cast<loom::Dataset*>(create(jsonl, toml, "data", message));
    if (data == nullptr) return data;
    data->open({rank, world, 1234, tok});
    return data;
  };

  // Options are checked like every component's.
  check(create(jsonl, "batch_size = 8\n", "data", message) == nullptr && message.find("file") != std::string::npos,
        "missing file is reported: " + message);
  check(create(jsonl, options + "mask_prob = 0.2\n", "data", message) == nullptr &&
            message.find("mask_prob") != std::string::npos,
        "unknown key is reported: " + message);

  // Layout, labels and masking rate over one epoch.
  loom::Dataset* data = open(options, 0, 1, tokenizer);
  check(data->size() == 101 && data->rank_size() == 101, "101 instances (blank lines skipped)");
  std::map<uint64_t, int> seen;
  size_t real_tokens = 0, masked = 0;
  for (bool last = false; !last;) {
    const Batch b = next(*data);
    last = b.shape.last_in_epoch != 0;
    check(b.shape.epoch == 0 && b.shape.seq % 8 == 0 && b.shape.seq <= 24, "epoch 0, seq a multiple of 8");
    for (int r = 0; r < b.shape.rows; ++r) {
      ++seen[b.instances[r]];
      const std::string line_text = [&] {
        std::string t;  // rebuild the line's text exactly as the file holds it
        const uint64_t i = b.instances[r];
        for (int k = 0; k < 5 + static_cast<int>(i * 7) % 23; ++k) t += (k ? " " : "") + kWords[(i * 3 + k * k) % kWords.size()];
        return t;
      }();
      std::vector<int32_t> original(24, 0);
      loom::EncodeOptions eo;
      eo.max_length = 24;
      const size_t n = tokenizer->encode(line_text.data(), line_text.size(), nullptr, 0, eo,
                                         {original.data(), nullptr, nullptr, original.size()});
      const int32_t* ids = &b.ids[static_cast<size_t>(r) * b.shape.seq];
      const int32_t* labels = &b.labels[static_cast<size_t>(r) * b.shape.seq];
      const int32_t* mask = &b.mask[static_cast<size_t>(r) * b.shape.seq];
      check(ids[0] == special.cls && ids[n - 1] == special.sep, "row starts with [CLS] and ends with [SEP]");
      for (size_t p = 0; p < static_cast<size_t>(b.shape.seq); ++p) {
        if (p >= n) {
          check(ids[p] == 0 && mask[p] == 0 && labels[p] == -1, "padding is id 0, mask 0, label -1");
          continue;
        }
        check(mask[p] == 1, "real tokens have mask 1");
        if (labels[p] == -1) {
          check(ids[p] == original[p], "unmasked token is the text's token");
        } else {
          check(labels[p] == original[p] && p > 0 && p + 1 < n, "label restores the text's token");
          ++masked;
        }
        if (p > 0 && p + 1 < n) ++real_tokens;
      }
      check(b.nsp[r] == -1, "no next-sentence label");
    }
  }
  check(seen.size() == 101, "every instance once per epoch");
  const double rate = static_cast<double>(masked) / static_cast<double>(real_tokens);
  check(rate > 0.11 && rate < 0.19, "masking rate near 0.15: " + std::to_string(rate));
  check(next(*data).shape.epoch == 1, "the next batch starts epoch 1");

  // Resuming from a saved cursor reproduces the following batches, masks included.
  loom::Dataset* first = open(options, 0, 1, tokenizer);
  next(*first);
  const loom::DatasetCursor saved = first->cursor();
  const Batch a1 = next(*first), a2 = next(*first);
  loom::Dataset* resumed = open(options, 0, 1, tokenizer);
  resumed->seek(saved);
  const Batch b1 = next(*resumed), b2 = next(*resumed);
  check(a1.ids == b1.ids && a1.labels == b1.labels && a2.ids == b2.ids && a2.instances == b2.instances,
        "a resumed dataset continues identically");

  // Two ranks together read each line exactly once per epoch.
  std::set<uint64_t> union_of_ranks;
  size_t total = 0;
  for (int rank = 0; rank < 2; ++rank) {
    loom::Dataset* part = open(options, rank, 2, tokenizer);
    for (bool last = false; !last;) {
      const Batch b = next(*part);
      last = b.shape.last_in_epoch != 0;
      for (int r = 0; r < b.shape.rows; ++r) union_of_ranks.insert(b.instances[r]), ++total;
    }
    jsonl.destroy(part);
  }
  check(union_of_ranks.size() == 101 && total == 101, "ranks partition the epoch");

  // Errors name the file and line, or say what the recipe lacks.
  auto open_error = [&](const std::string& toml, const loom::Tokenizer* tok) {
    auto* d = static_cast<loom::Dataset*>(create(jsonl, toml, "data", message));
    try {
      d->open({0, 1, 1, tok});
    } catch (const std::exception& e) {
      jsonl.destroy(d);
      return std::string(e.what());
    }
    jsonl.destroy(d);
    return std::string("(no error)");
  };
  const std::string bad = open_error("file = \"" + dir + "/bad.jsonl\"\n", tokenizer);
  check(bad.find("bad.jsonl:3") != std::string::npos && bad.find("\"text\"") != std::string::npos,
        "bad line named: " + bad);
  const std::string none = open_error(options, nullptr);
  check(none.find("[tokenizer]") != std::string::npos, "missing tokenizer explained: " + none);

  for (loom::Dataset* d : {data, first, resumed}) jsonl.destroy(d);
  tokenizer_desc->destroy(tokenizer);
  std::filesystem::remove_all(dir);
  if (failures > 0) return 1;
  std::printf("jsonl_mlm_test: all checks passed (masking rate %.3f)\n", rate);
  return 0;
}
