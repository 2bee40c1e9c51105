// The official SQuAD evaluation; see squad_score.hpp. Each function names the script function it
// follows; sums run in the scripts' order so the doubles match Python's bit for bit.
#include "eval/squad_score.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "eval/squad_normalize.hpp"
#include "loom_json/json_problem.hpp"
#include "recipe/errors.hpp"

namespace loom::host {
namespace {

using ordered_json = nlohmann::ordered_json;

const ordered_json& member(const ordered_json& object, const char* key, ordered_json::value_t type,
                           const std::string& path, const std::string& where) {
  const auto it = object.find(key);
  const bool ok = it != object.end() && (it->type() == type);
  if (!ok) {
    const char* expected = type == ordered_json::value_t::array    ? "an array"
                           : type == ordered_json::value_t::string ? "a string"
                                                                   : "an object";
    throw InputError(fmt::format("{}: {}: key \"{}\" is {}; expected {}", path, where, key,
                                 it == object.end() ? "missing" : "a " + std::string(it->type_name()),
                                 expected));
  }
  return *it;
}

// Counter(a) & Counter(b), summed.
size_t common_tokens(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::map<std::string, size_t> counts;
  for (const std::string& token : a) ++counts[token];
  size_t same = 0;
  for (const std::string& token : b) {
    const auto it = counts.find(token);
    if (it != counts.end() && it->second > 0) --it->second, ++same;
  }
  return same;
}

const std::string& prediction_text(const ordered_json& predictions, const std::string& id,
                                   const std::string& path) {
  const ordered_json& value = predictions.at(id);
  if (!value.is_string())
    throw InputError(fmt::format("{}: the prediction of question \"{}\" is a {}; expected a string", path, id,
                                 value.type_name()));
  return value.get_ref<const std::string&>();
}

double probability(const ordered_json& na_probs, const std::string& id, const std::string& path) {
  const auto it = na_probs.find(id);
  if (it == na_probs.end())
    throw InputError(fmt::format("{}: no no-answer probability for question \"{}\"", path, id));
  if (!it->is_number())
    throw InputError(
        fmt::format("{}: the no-answer probability of question \"{}\" is a {}; expected a number", path, id,
                    it->type_name()));
  return it->get<double>();
}

// A Python dict filled in a loop: the first insertion fixes a key's place, the last one its value.
struct ScoreTable {
  std::vector<std::string> order;
  std::unordered_map<std::string, double> value;
  void set(const std::string& key, double v) {
    if (value.emplace(key, v).second)
      order.push_back(key);
    else
      value[key] = v;
  }
  bool contains(const std::string& key) const { return value.count(key) != 0; }
};

// make_eval_dict over `qids` (every key of `exact` when empty).
void add_eval_dict(ordered_json& out, const std::string& prefix, const ScoreTable& exact,
                   const ScoreTable& f1, const std::vector<std::string>& qids,
                   const std::string& predictions_path) {
  const std::vector<std::string>& keys = qids.empty() ? exact.order : qids;
  double exact_sum = 0, f1_sum = 0;
  for (const std::string& k : keys) {
    if (!exact.contains(k))  // the script fails here with a KeyError
      throw InputError(
          fmt::format("{}: no prediction for question \"{}\" (SQuAD v2.0 evaluation needs one for "
                      "every question; predict \"\" for no answer)",
                      predictions_path, k));
    exact_sum += exact.value.at(k);
    f1_sum += f1.value.at(k);
  }
  const auto total = static_cast<int64_t>(keys.size());
  out[prefix + "exact"] = 100.0 * exact_sum / static_cast<double>(total);
  out[prefix + "f1"] = 100.0 * f1_sum / static_cast<double>(total);
  out[prefix + "total"] = total;
}

// find_best_thresh.
std::pair<double, ordered_json> best_threshold(const ordered_json& predictions, const ScoreTable& scores,
                                               const ordered_json& na_probs, const ScoreTable& has_answer,
                                               const std::string& predictions_path) {
  double current = 0;
  for (const std::string& k : has_answer.order)
    if (has_answer.value.at(k) == 0) current += 1;
  double best = current;
  ordered_json best_thresh = 0.0;
  std::vector<ordered_json::const_iterator> ranked;
  for (auto it = na_probs.begin(); it != na_probs.end(); ++it) ranked.push_back(it);
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return a->template get<double>() < b->template get<double>();
  });
  for (const auto& it : ranked) {
    const std::string& qid = it.key();
    if (!scores.contains(qid)) continue;
    double diff = 0;
    if (has_answer.value.at(qid) != 0)
      diff = scores.value.at(qid);
    else
      diff = prediction_text(predictions, qid, predictions_path).empty() ? 0 : -1;
    current += diff;
    if (current > best) {
      best = current;
      best_thresh = it.value();
    }
  }
  return {100.0 * best / static_cast<double>(scores.order.size()), best_thresh};
}

}  // namespace

ordered_json read_json_object(const std::string& path, const std::string& what) {
  std::error_code error;  // a folder opens, then fails in the JSON reader with the C++ library's words
  if (std::filesystem::is_directory(path, error)) throw InputError(path + ": is a folder, not the " + what);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path + ": cannot open the " + what);
  ordered_json root;
  try {
    root = ordered_json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("{}: the {} is not valid JSON{}", path, what, loom_json::json_parse_problem(e)));
  }
  if (!root.is_object())
    throw InputError(
        fmt::format("{}: the {} is a JSON {}; expected an object", path, what, root.type_name()));
  return root;
}

SquadGold read_squad_gold(const std::string& path) {
  const ordered_json root = read_json_object(path, "SQuAD file");
  SquadGold gold;
  gold.path = path;
  const auto version = root.find("version");
  const std::string v = version != root.end() && version->is_string() ? version->get<std::string>() : "";
  if (v == "2.0" || v == "v2.0") {
    gold.version_2 = true;
  } else if (v != "1.1" && v != "v1.1") {
    throw InputError(
        fmt::format("{}: \"version\" is {}; expected \"1.1\" (SQuAD v1.1) or \"v2.0\" (SQuAD v2.0)", path,
                    version == root.end() ? "missing" : version->dump()));
  }
  const ordered_json& data = member(root, "data", ordered_json::value_t::array, path, "top level");
  for (size_t a = 0; a < data.size(); ++a) {
    const std::string article_at = fmt::format("data[{}]", a);
    if (!data[a].is_object()) throw InputError(fmt::format("{}: {} is not an object", path, article_at));
    const ordered_json& paragraphs =
        member(data[a], "paragraphs", ordered_json::value_t::array, path, article_at);
    for (size_t p = 0; p < paragraphs.size(); ++p) {
      const std::string paragraph_at = fmt::format("{}.paragraphs[{}]", article_at, p);
      if (!paragraphs[p].is_object())
        throw InputError(fmt::format("{}: {} is not an object", path, paragraph_at));
      const ordered_json& qas =
          member(paragraphs[p], "qas", ordered_json::value_t::array, path, paragraph_at);
      for (size_t q = 0; q < qas.size(); ++q) {
        const std::string qa_at = fmt::format("{}.qas[{}]", paragraph_at, q);
        if (!qas[q].is_object()) throw InputError(fmt::format("{}: {} is not an object", path, qa_at));
        SquadGold::Question question;
        question.id = member(qas[q], "id", ordered_json::value_t::string, path, qa_at).get<std::string>();
        const ordered_json& answers = member(qas[q], "answers", ordered_json::value_t::array, path, qa_at);
        for (size_t i = 0; i < answers.size(); ++i) {
          const std::string answer_at = fmt::format("{}.answers[{}]", qa_at, i);
          if (!answers[i].is_object())
            throw InputError(fmt::format("{}: {} is not an object", path, answer_at));
          question.answers.push_back(
              member(answers[i], "text", ordered_json::value_t::string, path, answer_at).get<std::string>());
        }
        gold.questions.push_back(std::move(question));
      }
    }
  }
  if (gold.questions.empty()) throw InputError(path + ": no questions (the scores would divide by zero)");
  return gold;
}

double squad_f1(const std::string& prediction, const std::string& gold, bool version_2) {
  // v2.0's get_tokens("") is [] without normalising; normalising "" gives no token either.
  const std::vector<std::string> prediction_tokens = squad_answer_tokens(prediction);
  const std::vector<std::string> gold_tokens = squad_answer_tokens(gold);
  const size_t same = common_tokens(prediction_tokens, gold_tokens);
  if (version_2 && (gold_tokens.empty() || prediction_tokens.empty()))
    return gold_tokens == prediction_tokens ? 1.0 : 0.0;
  if (same == 0) return 0.0;
  const double precision = 1.0 * static_cast<double>(same) / static_cast<double>(prediction_tokens.size());
  const double recall = 1.0 * static_cast<double>(same) / static_cast<double>(gold_tokens.size());
  return (2 * precision * recall) / (precision + recall);
}

ordered_json score_squad_v1(const SquadGold& gold, const ordered_json& predictions,
                            const std::string& predictions_path, std::vector<std::string>& notes) {
  int64_t exact_match = 0;
  double f1 = 0;
  for (const SquadGold::Question& qa : gold.questions) {
    if (!predictions.contains(qa.id)) {
      notes.push_back("Unanswered question " + qa.id + " will receive score 0.");
      continue;
    }
    if (qa.answers.empty())  // max() of no scores: the script fails
      throw InputError(fmt::format("{}: question \"{}\" has no answers (SQuAD v1.1 needs at least one)",
                                   gold.path, qa.id));
    const std::string& prediction = prediction_text(predictions, qa.id, predictions_path);
    const std::string normalized = normalize_squad_answer(prediction);
    bool exact = false;
    double best_f1 = 0;
    for (size_t i = 0; i < qa.answers.size(); ++i) {
      exact = exact || normalized == normalize_squad_answer(qa.answers[i]);
      const double score = squad_f1(prediction, qa.answers[i], false);
      best_f1 = i == 0 ? score : std::max(best_f1, score);
    }
    exact_match += exact ? 1 : 0;
    f1 += best_f1;
  }
  const auto total = static_cast<double>(gold.questions.size());
  ordered_json out;
  out["exact_match"] = 100.0 * static_cast<double>(exact_match) / total;
  out["f1"] = 100.0 * f1 / total;
  return out;
}

ordered_json score_squad_v2(const SquadGold& gold, const ordered_json& predictions,
                            const std::string& predictions_path,
                            const std::optional<ordered_json>& na_probs_file,
                            const std::string& na_probs_path, double na_prob_thresh) {
  ordered_json na_probs = ordered_json::object();
  if (na_probs_file) {
    na_probs = *na_probs_file;
  } else {
    for (auto it = predictions.begin(); it != predictions.end(); ++it) na_probs[it.key()] = 0.0;
  }
  // make_qid_to_has_ans, then get_raw_scores.
  ScoreTable has_answer, exact_raw, f1_raw;
  for (const SquadGold::Question& qa : gold.questions) has_answer.set(qa.id, qa.answers.empty() ? 0 : 1);
  for (const SquadGold::Question& qa : gold.questions) {
    std::vector<std::string> gold_answers;
    for (const std::string& answer : qa.answers)
      if (!normalize_squad_answer(answer).empty()) gold_answers.push_back(answer);
    if (gold_answers.empty()) gold_answers.push_back("");
    if (!predictions.contains(qa.id)) continue;  // the script prints "Missing prediction" and fails later
    const std::string& prediction = prediction_text(predictions, qa.id, predictions_path);
    const std::string normalized = normalize_squad_answer(prediction);
    double exact = 0, f1 = 0;
    for (size_t i = 0; i < gold_answers.size(); ++i) {
      const double e = normalize_squad_answer(gold_answers[i]) == normalized ? 1 : 0;
      const double f = squad_f1(prediction, gold_answers[i], true);
      exact = i == 0 ? e : std::max(exact, e);
      f1 = i == 0 ? f : std::max(f1, f);
    }
    exact_raw.set(qa.id, exact);
    f1_raw.set(qa.id, f1);
  }
  // apply_no_ans_threshold.
  const std::string& probabilities_path = na_probs_file ? na_probs_path : predictions_path;
  auto thresholded = [&](const ScoreTable& raw) {
    ScoreTable out;
    for (const std::string& qid : raw.order) {
      const bool predicted_no_answer = probability(na_probs, qid, probabilities_path) > na_prob_thresh;
      out.set(qid, predicted_no_answer ? (has_answer.value.at(qid) == 0 ? 1.0 : 0.0) : raw.value.at(qid));
    }
    return out;
  };
  const ScoreTable exact_thresh = thresholded(exact_raw), f1_thresh = thresholded(f1_raw);
  std::vector<std::string> has_answer_qids, no_answer_qids;
  for (const std::string& qid : has_answer.order)
    (has_answer.value.at(qid) != 0 ? has_answer_qids : no_answer_qids).push_back(qid);
  ordered_json out;
  if (exact_thresh.order.empty())
    throw InputError(predictions_path + ": no prediction for any question of " + gold.path);
  add_eval_dict(out, "", exact_thresh, f1_thresh, {}, predictions_path);
  if (!has_answer_qids.empty())
    add_eval_dict(out, "HasAns_", exact_thresh, f1_thresh, has_answer_qids, predictions_path);
  if (!no_answer_qids.empty())
    add_eval_dict(out, "NoAns_", exact_thresh, f1_thresh, no_answer_qids, predictions_path);
  if (na_probs_file) {
    for (auto it = na_probs.begin(); it != na_probs.end(); ++it)
      if (!it->is_number())
        throw InputError(fmt::format("{}: the no-answer probability of \"{}\" is a {}; expected a number",
                                     na_probs_path, it.key(), it->type_name()));
    const auto [best_exact, exact_threshold] =
        best_threshold(predictions, exact_raw, na_probs, has_answer, predictions_path);
    const auto [best_f1, f1_threshold] =
        best_threshold(predictions, f1_raw, na_probs, has_answer, predictions_path);
    out["best_exact"] = best_exact;
    out["best_exact_thresh"] = exact_threshold;
    out["best_f1"] = best_f1;
    out["best_f1_thresh"] = f1_threshold;
  }
  return out;
}

ordered_json score_squad_files(const std::string& dev_path, const std::string& predictions_path,
                               const std::string& na_probs_path, double na_prob_thresh,
                               std::vector<std::string>& notes) {
  const SquadGold gold = read_squad_gold(dev_path);
  const ordered_json predictions = read_json_object(predictions_path, "predictions file");
  if (!gold.version_2) {
    if (!na_probs_path.empty())
      throw InputError(na_probs_path + ": no-answer probabilities apply to SQuAD v2.0; " + dev_path +
                       " is a v1.1 file");
    return score_squad_v1(gold, predictions, predictions_path, notes);
  }
  std::optional<ordered_json> na_probs;
  if (!na_probs_path.empty()) na_probs = read_json_object(na_probs_path, "no-answer probabilities file");
  return score_squad_v2(gold, predictions, predictions_path, na_probs, na_probs_path, na_prob_thresh);
}

}  // namespace loom::host
