// libFuzzer target for the SQuAD JSON reader of dataset/squad (squad_reader.hpp). The input is one
// SQuAD file, read for training (answers located in the context) and for evaluation. Properties:
// - every refusal is a loom::IoError; nothing else escapes;
// - question ids are unique; the report counts every question, kept or dropped;
// - a training example that is not impossible has its answer's first and last word inside the
//   context's words, in order; an impossible one has no position.
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_support.hpp"
#include "loom/sdk/error.hpp"
#include "squad_reader.hpp"

using loom_datasets::SquadExample;
using loom_datasets::SquadReadReport;
using loom_fuzz::require;

namespace {

void read(const std::string& path, bool training) {
  SquadReadReport report;
  std::vector<SquadExample> examples;
  try {
    examples = loom_datasets::read_squad_examples(path, training, report);
  } catch (const loom::IoError&) {
    return;
  }
  require(report.questions == examples.size() + report.dropped, "every question is kept or dropped");
  require(training || report.dropped == 0, "evaluation drops no question");
  require(report.dropped == 0 || !report.first_dropped.empty(), "the first dropped question is named");
  std::set<std::string> ids;
  for (const SquadExample& example : examples) {
    require(ids.insert(example.qas_id).second, "question ids are unique");
    if (!training) continue;
    if (example.is_impossible) {
      require(example.start_word == -1 && example.end_word == -1, "an impossible question has no answer position");
      continue;
    }
    const auto words = static_cast<std::int32_t>(example.doc_words.size());
    require(example.start_word >= 0 && example.start_word <= example.end_word && example.end_word < words,
            "a training answer lies inside the context's words");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path =
      loom_fuzz::write_scratch_file("squad.json", std::string_view(reinterpret_cast<const char*>(data), size));
  read(path, true);
  read(path, false);
  return 0;
}
