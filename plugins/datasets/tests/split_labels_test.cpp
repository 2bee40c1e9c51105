// One label map per task: dataset/text-classification handed the task's labels (DatasetLabels)
// numbers its classes by them, by name, and refuses labels outside them with file and line.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "dataset_test_support.hpp"
#include "loom/sdk/dataset_labels.hpp"

namespace fs = std::filesystem;
using namespace datasets_test;

namespace {

struct Split {
  std::vector<std::string> names;      // label_name(0 … num_labels−1)
  std::vector<std::string> row_names;  // each row's class, by name, in file order
};

class TaskLabels : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("loom-task-labels-" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::vector<std::string>& labels) {
    const fs::path path = dir_ / name;
    std::ofstream out(path);
    out << "label\ttext\n";
    for (size_t i = 0; i < labels.size(); ++i) out << labels[i] << "\tsentence number " << i << "\n";
    return path.string();
  }

  // Opens `file` (extra options `toml`), handing it `task` first when it is not empty.
  Split open(const std::string& file, const std::vector<std::string>& task, const std::string& toml = "") {
    static auto tokenizer = make_tokenizer(data_file("vocab.txt"));
    auto dataset = make_dataset("text-classification",
                                "file = \"" + file + "\"\nshuffle = false\nbatch_size = 4\n" + toml);
    if (!task.empty()) {
      auto* labels = dataset.find<loom::DatasetLabels>();
      EXPECT_NE(labels, nullptr);
      std::vector<const char*> names;
      for (const auto& name : task) names.push_back(name.c_str());
      labels->use_labels(names.data(), names.size(), "the training split [data]");
    }
    Split split;
    dataset.call([&](loom::Dataset& d) {
      d.open(setup(1, 0, 1, tokenizer.get()));
      for (int32_t i = 0; i < d.limits().num_labels; ++i) split.names.emplace_back(d.label_name(i));
      Batch batch(d.limits());
      do {
        batch.shape = d.next_batch(batch.buffers());
        for (int32_t r = 0; r < batch.shape.rows; ++r)
          split.row_names.emplace_back(d.label_name(batch.labels[static_cast<size_t>(r)]));
      } while (batch.shape.last_in_epoch == 0);
    });
    return split;
  }

  std::string error_of(const std::string& file, const std::vector<std::string>& task,
                       const std::string& toml = "") {
    try {
      open(file, task, toml);
    } catch (const std::exception& e) {
      return e.what();
    }
    return "";
  }

  fs::path dir_;
};

}  // namespace

TEST_F(TaskLabels, ADevFileListingLabelsInAnotherOrderKeepsTheTrainingClasses) {
  const std::string dev = write("dev.tsv", {"neg", "pos", "pos", "neg"});
  // Its own labels option lists them the other way round; the task's order wins, by name.
  const Split split = open(dev, {"pos", "neg"}, "labels = [\"neg\", \"pos\"]\n");
  EXPECT_EQ(split.names, (std::vector<std::string>{"pos", "neg"}));
  EXPECT_EQ(split.row_names, (std::vector<std::string>{"neg", "pos", "pos", "neg"}));
  // Without the task's map it numbers them its own way: the silent disagreement this prevents.
  EXPECT_EQ(open(dev, {}, "labels = [\"neg\", \"pos\"]\n").names, (std::vector<std::string>{"neg", "pos"}));
}

TEST_F(TaskLabels, ATwoLabelDevFileUnderAThreeLabelTaskHasTheTasksThreeClasses) {
  const std::string dev = write("dev.tsv", {"2", "0", "2"});
  const Split split = open(dev, {"0", "1", "2"});
  EXPECT_EQ(split.names, (std::vector<std::string>{"0", "1", "2"}));
  EXPECT_EQ(split.row_names, (std::vector<std::string>{"2", "0", "2"}));
  // Alone it would have two classes, "0" and "2", so class 1 would mean "2".
  EXPECT_EQ(open(dev, {}).names, (std::vector<std::string>{"0", "2"}));
}

TEST_F(TaskLabels, ALabelTheTaskDoesNotHaveNamesFileAndLine) {
  const std::string dev = write("dev.tsv", {"0", "1", "2"});
  const std::string message = error_of(dev, {"0", "1"});
  EXPECT_NE(message.find(dev + ":4: label '2' is not one of the task's labels [0, 1]"), std::string::npos)
      << message;
  EXPECT_NE(message.find("the training split [data]"), std::string::npos) << message;
}

TEST_F(TaskLabels, ALabelsOptionNamingAClassTheTaskLacksIsRefused) {
  const std::string dev = write("dev.tsv", {"0", "1"});
  const std::string message = error_of(dev, {"0", "1"}, "labels = [\"0\", \"1\", \"maybe\"]\n");
  EXPECT_NE(message.find("labels option lists 'maybe'"), std::string::npos) << message;
}

TEST_F(TaskLabels, GlueTasksTakeTheMapByNameToo) {
  const fs::path path = dir_ / "mnli_dev.tsv";
  std::ofstream(path) << "sentence1\tsentence2\tgold_label\na b\tc d\tneutral\ne f\tg h\tentailment\n";
  const Split split = open(path.string(), {"entailment", "neutral", "contradiction"}, "task = \"mnli\"\n");
  EXPECT_EQ(split.names, (std::vector<std::string>{"entailment", "neutral", "contradiction"}));
  EXPECT_EQ(split.row_names, (std::vector<std::string>{"neutral", "entailment"}));
}
