// Building a RunHistory from protocol messages; see run_history.hpp.
#include "run_history.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "message_fields.hpp"

namespace loom::dash {
namespace {

double number(const nlohmann::json& value) {
  if (value.is_number()) return value.get<double>();
  return std::numeric_limits<double>::quiet_NaN();  // null or "nan" written for a non-finite loss
}

}  // namespace

void RunHistory::ingest(const nlohmann::json& message, double now) {
  if (!message.is_object()) return;
  const std::string type = text_field(message, "type", "");
  if (type == "hello") {
    *this = RunHistory{};
    hello = message;
    last_step = count_field(message, "step");
    return;
  }
  if (type == "dropped") {
    dropped += count_field(message, "count");
    return;
  }
  if (type == "ack" || type == "error") {
    messages.push_back(type == "ack" ? "ack: " + text_field(message, "command", "?") + " at step " +
                                           std::to_string(count_field(message, "step"))
                                     : "error: " + text_field(message, "message", "?"));
    return;
  }
  if (type == "end") {
    end = message;
    return;
  }
  const auto step_field = message.find("step");
  if (step_field == message.end() || !step_field->is_number()) return;
  const double step = step_field->get<double>();
  if (type == "event") {
    if (message.contains("checkpoint")) checkpoint_steps.push_back(step);
    return;
  }
  if (type != "train" && type != "eval") return;
  ++records;
  last_record_seconds = now;
  last_step = std::max(last_step, count_of(*step_field));
  const auto keep = [&](const char* field) {
    const auto value = message.find(field);
    if (value != message.end()) series[field].add(step, number(*value));
  };
  for (const char* field : kPlottedFields) keep(field);
  for (const char* field : kPanelFields) keep(field);
  if (type == "eval") eval_steps.push_back(step);
  const auto skipped = message.find("skipped_steps");
  if (skipped != message.end() && skipped->is_number()) {
    if (skipped->get<double>() > skipped_total) skipped_steps.push_back(step);
    skipped_total = skipped->get<double>();
  }
  // Data-parallel runs list every rank: "ranks": [{"rank": r, "step_ms": ..., ...}, ...].
  const auto ranks = message.find("ranks");
  if (ranks != message.end() && ranks->is_array()) {
    rank_step_ms.clear();
    for (const auto& rank : *ranks)
      if (rank.is_object() && rank.contains("step_ms")) rank_step_ms.push_back(number(rank["step_ms"]));
  } else if (message.contains("step_ms")) {
    rank_step_ms = {number(message["step_ms"])};
  }
}

uint64_t RunHistory::total_steps() const {
  return count_field(hello, "total_steps");
}

}  // namespace loom::dash
