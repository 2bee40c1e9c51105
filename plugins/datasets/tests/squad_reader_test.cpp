// dataset/squad on malformed files: typed fields named by their JSON path, duplicate question ids,
// and dropped training questions counted, reported and refused above max_dropped_fraction.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "dataset_test_support.hpp"

namespace fs = std::filesystem;
using namespace datasets_test;
using nlohmann::json;

namespace {

// "alpha0 beta0 alpha1 beta1 …": question i asks for "beta<i>"; a wrong offset points at the next
// question's answer, where the reference's check does not find the text.
constexpr int kQuestions = 21;

struct Context {
  std::string text;
  std::vector<int64_t> starts;  // code points (ASCII: bytes) where beta<i> begins
};

Context make_context() {
  Context c;
  for (int i = 0; i < kQuestions; ++i) {
    c.text.append(i ? " alpha" : "alpha").append(std::to_string(i)).append(" ");
    c.starts.push_back(static_cast<int64_t>(c.text.size()));
    c.text.append("beta").append(std::to_string(i));
  }
  return c;
}

json squad_file(int wrong_offsets) {
  const Context c = make_context();
  json qas = json::array();
  for (int i = 0; i < kQuestions; ++i) {
    const int64_t start = c.starts[static_cast<size_t>(i < wrong_offsets ? (i + 1) % kQuestions : i)];
    const std::string n = std::to_string(i);
    json qa = json::object();
    qa["id"] = std::string("q").append(n);
    qa["question"] = std::string("Which beta is number ").append(n).append("?");
    qa["answers"] = json::array({{{"text", std::string("beta").append(n)}, {"answer_start", start}}});
    qas.push_back(qa);
  }
  const json paragraph = {{"context", c.text}, {"qas", qas}};
  return {{"version", "1.1"},
          {"data", json::array({{{"title", "t"}, {"paragraphs", json::array({paragraph})}}})}};
}

class SquadReader : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("loom-squad-reader-" + std::to_string(getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const json& content) {
    const fs::path path = dir_ / ("squad" + std::to_string(files_++) + ".json");
    std::ofstream(path) << content.dump(1);
    return path.string();
  }
  // Opens the file; returns the error ("" when it opens) and the dataset's first description.
  std::string open(const std::string& file, const std::string& toml = "", json* description = nullptr) {
    static auto tokenizer = make_tokenizer(data_file("vocab.txt"));
    try {
      auto dataset = make_dataset("squad", "file = \"" + file + "\"\n" + toml);
      dataset.call([&](loom::Dataset& d) {
        d.open(setup(1, 0, 1, tokenizer.get()));
        if (description != nullptr) {
          std::string text(d.describe_instance(0, nullptr, 0), '\0');
          d.describe_instance(0, text.data(), text.size() + 1);
          *description = json::parse(text);
        }
      });
    } catch (const std::exception& e) {
      return e.what();
    }
    return "";
  }

  fs::path dir_;
  int files_ = 0;
};

}  // namespace

TEST_F(SquadReader, TheFixtureOpensWithNothingDropped) {
  json description;
  EXPECT_EQ(open(write(squad_file(0)), "", &description), "");
  EXPECT_EQ(description["questions_skipped_in_file"], 0);
}

TEST_F(SquadReader, AFractionalAnswerStartIsATypeErrorNamingTheField) {
  json file = squad_file(0);
  for (auto& qa : file["data"][0]["paragraphs"][0]["qas"]) qa["answers"][0]["answer_start"] = 3.7;
  const std::string path = write(file);
  for (const std::string mode : {"train", "eval"}) {
    const std::string message = open(path, "mode = \"" + mode + "\"\n");
    EXPECT_NE(message.find(path + ": data[0].paragraphs[0].qas[0].answers[0].answer_start: expected a "
                                  "non-negative integer (a code-point offset), got 3.7"),
              std::string::npos)
        << message;
  }
}

TEST_F(SquadReader, WrongJsonTypesNameFileAndFieldNotTheLibrary) {
  const std::vector<std::pair<json::json_pointer, json>> cases = {
      {json::json_pointer("/data/0/paragraphs/0/qas/2/question"), 5},
      {json::json_pointer("/data/0/paragraphs/0/context"), json::array()},
      {json::json_pointer("/data/0/paragraphs/0/qas/1/answers/0/text"), nullptr},
      {json::json_pointer("/data/0/paragraphs/0/qas/3/is_impossible"), "no"},
      {json::json_pointer("/data/0/paragraphs"), json::object()},
  };
  const std::vector<std::string> expected = {
      "data[0].paragraphs[0].qas[2].question: expected a string, got number",
      "data[0].paragraphs[0].context: expected a string, got array",
      "data[0].paragraphs[0].qas[1].answers[0].text: expected a string, got null",
      "data[0].paragraphs[0].qas[3].is_impossible: expected true or false, got string",
      "data[0].paragraphs: expected an array, got object",
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    json file = squad_file(0);
    file[cases[i].first] = cases[i].second;
    const std::string path = write(file);
    const std::string message = open(path);
    EXPECT_NE(message.find(path + ": " + expected[i]), std::string::npos) << message;
    EXPECT_EQ(message.find("json.exception"), std::string::npos) << message;
  }
}

TEST_F(SquadReader, ADuplicateQuestionIdIsAnError) {
  json file = squad_file(0);
  file["data"][0]["paragraphs"][0]["qas"][7]["id"] = "q2";
  const std::string path = write(file);
  const std::string message = open(path, "mode = \"eval\"\n");
  EXPECT_NE(message.find(path + ": data[0].paragraphs[0].qas[7].id: question id 'q2' is used twice (first at "
                                "data[0].paragraphs[0].qas[2])"),
            std::string::npos)
      << message;
}

TEST_F(SquadReader, DroppedQuestionsAreCountedAndRefusedAboveTheShare) {
  // One of 21 (4.8%) answers is not where answer_start points: over the default 1%.
  const std::string path = write(squad_file(1));
  std::string message = open(path);
  EXPECT_NE(message.find(path + ": dropped 1 of 21 training questions (4.8%)"), std::string::npos) << message;
  EXPECT_NE(message.find("question 'q0'"), std::string::npos) << message;
  EXPECT_NE(message.find("max_dropped_fraction = 0.01"), std::string::npos) << message;
  // Allowed a larger share, the dataset opens without it and says so.
  json description;
  EXPECT_EQ(open(path, "max_dropped_fraction = 0.05\n", &description), "");
  EXPECT_EQ(description["questions_skipped_in_file"], 1);
  // Twenty of 21 is refused even then.
  message = open(write(squad_file(20)), "max_dropped_fraction = 0.05\n");
  EXPECT_NE(message.find("dropped 20 of 21 training questions (95.2%)"), std::string::npos) << message;
  // Evaluation reads every question: nothing is dropped.
  EXPECT_EQ(open(write(squad_file(20)), "mode = \"eval\"\n"), "");
}
