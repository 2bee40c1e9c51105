// The official SQuAD evaluation against tests/tools/squad_official_eval.py (a re-implementation of
// evaluate-v1.1.py / evaluate-v2.0.py run under Python 3): every normalisation case and every
// scoring case of tests/fixtures/squad/ gives the same strings and the same doubles, bit for bit.
#include "eval/squad_score.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "eval/squad_normalize.hpp"
#include "recipe/errors.hpp"

namespace loom::host {
namespace {

namespace fs = std::filesystem;
const fs::path kFixtures = fs::path(LOOM_SOURCE_FIXTURE_DIR) / "squad";

nlohmann::ordered_json read_fixture(const std::string& name) {
  std::ifstream in(kFixtures / name);
  return nlohmann::ordered_json::parse(in);
}

TEST(SquadNormalize, MatchesThePythonScriptsOnEveryFixtureText) {
  const nlohmann::ordered_json cases = read_fixture("normalize-cases.json");
  ASSERT_GT(cases.size(), 100u);
  for (const auto& c : cases) {
    const std::string text = c[0];
    EXPECT_EQ(normalize_squad_answer(text), c[1].get<std::string>()) << c.dump();
    EXPECT_EQ(squad_answer_tokens(text), c[2].get<std::vector<std::string>>()) << c.dump();
  }
}

TEST(SquadNormalize, RulesOneByOne) {
  EXPECT_EQ(normalize_squad_answer("The theatre, an anthem"),
            "theatre anthem");                             // articles inside words stay
  EXPECT_EQ(normalize_squad_answer("The-end"), "theend");  // punctuation goes first
  EXPECT_EQ(normalize_squad_answer("\xC2\xAB"
                                   "Paris"
                                   "\xC2\xBB"),
            "\xC2\xAB"
            "paris"
            "\xC2\xBB");                                                  // « » stay
  EXPECT_EQ(normalize_squad_answer("\xC4\xB0"), "i\xCC\x87");             // İ → i + U+0307
  EXPECT_EQ(normalize_squad_answer("\xCE\x9F\xCE\xA3 \xCE\xA3\xCE\x91"),  // ΟΣ ΣΑ → ος σα
            "\xCE\xBF\xCF\x82 \xCF\x83\xCE\xB1");
  EXPECT_EQ(normalize_squad_answer("new\xC2\xA0york\xE3\x80\x80"
                                   "city\x1C"
                                   "x"),
            "new york city x");
  EXPECT_EQ(normalize_squad_answer("new\xE2\x80\x8Byork"), "new\xE2\x80\x8Byork");  // U+200B is not a space
  EXPECT_EQ(normalize_squad_answer("a1 the\xD9\xA3 an"), "a1 the\xD9\xA3");  // digits are word characters
  EXPECT_EQ(normalize_squad_answer("the\xCC\x81"), "\xCC\x81");              // a combining mark is not
}

TEST(SquadF1, EmptyAnswersDifferBetweenVersions) {
  EXPECT_EQ(squad_f1("", "the", false), 0.0);  // v1.1: nothing shared is 0, even two empty answers
  EXPECT_EQ(squad_f1("", "the", true), 1.0);   // v2.0: both empty agree
  EXPECT_EQ(squad_f1("x", "", true), 0.0);
  EXPECT_EQ(squad_f1("the cat cat", "cat sat", false), 2 * 0.5 * 0.5 / (0.5 + 0.5));
}

TEST(SquadScore, MatchesThePythonScriptsOnEveryFixtureCase) {
  const nlohmann::ordered_json cases = read_fixture("expected.json");
  ASSERT_GE(cases.size(), 6u);
  for (const auto& c : cases) {
    std::vector<std::string> args;
    for (const auto& a : c["args"]) args.push_back(a);
    std::string na_probs;
    double thresh = 1.0;
    for (size_t i = 2; i < args.size(); i += 2) {
      if (args[i] == "--na-prob") na_probs = (kFixtures / args[i + 1]).string();
      if (args[i] == "--na-prob-thresh") thresh = std::stod(args[i + 1]);
    }
    std::vector<std::string> notes;
    const nlohmann::ordered_json got = score_squad_files(
        (kFixtures / args[0]).string(), (kFixtures / args[1]).string(), na_probs, thresh, notes);
    const nlohmann::ordered_json& expected = c["expected"];
    ASSERT_EQ(got.size(), expected.size()) << c["name"] << ": " << got.dump();
    auto g = got.begin();
    for (auto e = expected.begin(); e != expected.end(); ++e, ++g) {
      EXPECT_EQ(g.key(), e.key()) << c["name"];
      EXPECT_EQ(g->is_number_integer(), e->is_number_integer()) << c["name"] << " " << e.key();
      EXPECT_EQ(g->get<double>(), e->get<double>()) << c["name"] << " " << e.key();  // exactly
    }
    if (c["name"] == "v1.1") {
      EXPECT_EQ(notes,
                std::vector<std::string>{"Unanswered question missing-prediction will receive score 0."});
    }
  }
}

class SquadScoreErrors : public ::testing::Test {
 protected:
  fs::path dir_ = fs::temp_directory_path() / ("loom-squad-score-" + std::to_string(::getpid()));
  void SetUp() override { fs::create_directories(dir_); }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return (dir_ / name).string();
  }
  // The InputError's message, "" when none was thrown.
  static std::string error_of(const std::string& dev, const std::string& predictions,
                              const std::string& na = "") {
    std::vector<std::string> notes;
    try {
      score_squad_files(dev, predictions, na, 1.0, notes);
    } catch (const InputError& e) {
      return e.what();
    }
    return "";
  }
};

TEST_F(SquadScoreErrors, NameTheFileAndWhatIsWrong) {
  const std::string v1 = write("v1.json", R"({"version": "1.1", "data": [{"paragraphs": [{"qas": [
      {"id": "q1", "answers": [{"text": "x"}]}, {"id": "q2", "answers": [{"text": "y"}]}]}]}]})");
  const std::string v2 = write("v2.json", R"({"version": "v2.0", "data": [{"paragraphs": [{"qas": [
      {"id": "q1", "answers": [{"text": "x"}]}, {"id": "q2", "answers": []}]}]}]})");
  const std::string good = write("good.json", R"({"q1": "x", "q2": ""})");
  EXPECT_EQ(error_of(v1, good), "");
  EXPECT_EQ(error_of(v2, good), "");

  const std::string truncated = write("truncated.json", R"({"q1": "x", )");
  EXPECT_NE(error_of(v1, truncated).find(truncated + ": the predictions file is not valid JSON"),
            std::string::npos);
  const std::string list = write("list.json", R"(["x"])");
  EXPECT_NE(error_of(v1, list).find("is a JSON array; expected an object"), std::string::npos);
  EXPECT_NE(error_of(write("nover.json", R"({"data": []})"), good).find("\"version\" is missing"),
            std::string::npos);
  EXPECT_NE(error_of(write("nodata.json", R"({"version": "1.1"})"), good).find("key \"data\" is missing"),
            std::string::npos);
  const std::string bad_qa = write(
      "badqa.json", R"({"version": "1.1", "data": [{"paragraphs": [{"qas": [{"id": 7, "answers": []}]}]}]})");
  EXPECT_NE(
      error_of(bad_qa, good).find("data[0].paragraphs[0].qas[0]: key \"id\" is a number; expected a string"),
      std::string::npos);
  const std::string no_answers =
      write("noanswers.json",
            R"({"version": "1.1", "data": [{"paragraphs": [{"qas": [{"id": "q1", "answers": []}]}]}]})");
  EXPECT_NE(error_of(no_answers, good).find("question \"q1\" has no answers"), std::string::npos);
  const std::string number = write("number.json", R"({"q1": 3, "q2": ""})");
  EXPECT_NE(error_of(v1, number).find("the prediction of question \"q1\" is a number"), std::string::npos);
  EXPECT_NE(error_of(v2, write("missing.json", R"({"q1": "x"})")).find("no prediction for question \"q2\""),
            std::string::npos);
  const std::string na_partial = write("na.json", R"({"q1": 0.5})");
  EXPECT_NE(
      error_of(v2, good, na_partial).find(na_partial + ": no no-answer probability for question \"q2\""),
      std::string::npos);
  EXPECT_NE(error_of(v1, good, na_partial).find("no-answer probabilities apply to SQuAD v2.0"),
            std::string::npos);
  EXPECT_NE(error_of((dir_ / "absent.json").string(), good).find("cannot open"), std::string::npos);
}

}  // namespace
}  // namespace loom::host
