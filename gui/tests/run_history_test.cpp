// RunHistory takes whatever a server or a replayed metrics.jsonl sends: mistyped or out-of-range
// fields read as absent instead of throwing (which ended loom-dash) or converting out of range.
#include <gtest/gtest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "message_fields.hpp"
#include "run_history.hpp"

namespace loom::dash {
namespace {

RunHistory ingested(const std::vector<const char*>& lines) {
  RunHistory history;
  for (const char* line : lines) history.ingest(nlohmann::json::parse(line), 1.0);
  return history;
}

TEST(RunHistory, ReadsTheRunsMessages) {
  const RunHistory history = ingested({
      R"({"type":"hello","run":"r","step":2,"total_steps":400})",
      R"({"type":"train","step":4,"loss":11.0,"step_ms":60.0})",
      R"({"type":"dropped","count":3})",
      R"({"type":"ack","command":"pause","id":1,"step":5})",
      R"({"type":"error","message":"invalid token"})",
  });
  EXPECT_EQ(history.total_steps(), 400u);
  EXPECT_EQ(history.last_step, 4u);
  EXPECT_EQ(history.records, 1u);
  EXPECT_EQ(history.dropped, 3u);
  ASSERT_EQ(history.messages.size(), 2u);
  EXPECT_EQ(history.messages[0], "ack: pause at step 5");
  EXPECT_EQ(history.messages[1], "error: invalid token");
}

TEST(RunHistory, MistypedFieldsReadAsAbsent) {
  RunHistory history;
  EXPECT_NO_THROW(history = ingested({
                      R"({"type":null})",
                      R"({"type":1,"step":3})",
                      R"([{"type":"hello"}])",
                      R"({"type":"hello","step":"5","total_steps":-3})",
                      R"({"type":"dropped","count":"many"})",
                      R"({"type":"ack","command":5,"step":1.5})",
                      R"({"type":"error","message":{}})",
                  }));
  EXPECT_EQ(history.total_steps(), 0u);
  EXPECT_EQ(history.last_step, 0u);
  EXPECT_EQ(history.dropped, 0u);
  ASSERT_EQ(history.messages.size(), 2u);
  EXPECT_EQ(history.messages[0], "ack: ? at step 1");
  EXPECT_EQ(history.messages[1], "error: ?");
}

TEST(RunHistory, StepsOutsideTheCountRangeKeepTheLastStep) {
  // get<uint64_t>() of these doubles is undefined behaviour; they are plotted, never counted.
  const RunHistory history = ingested({
      R"({"type":"train","step":7,"loss":1.0})",
      R"({"type":"train","step":-1e300,"loss":2.0})",
      R"({"type":"eval","step":1e30,"loss":3.0})",
  });
  EXPECT_EQ(history.records, 3u);
  EXPECT_EQ(history.last_step, 7u);
  EXPECT_EQ(history.series.at("loss").value.size(), 3u);
}

TEST(MessageFields, CountsAreNonNegativeWholeNumbersInRange) {
  EXPECT_EQ(count_of(nlohmann::json(2.0)), 2u);
  EXPECT_EQ(count_of(nlohmann::json(18446744073709551615ull)), 18446744073709551615ull);
  EXPECT_EQ(count_of(nlohmann::json(-1)), 0u);
  EXPECT_EQ(count_of(nlohmann::json(-0.5)), 0u);
  EXPECT_EQ(count_of(nlohmann::json(18446744073709551616.0)), 0u);
  EXPECT_EQ(count_of(nlohmann::json(NAN)), 0u);
  EXPECT_EQ(count_of(nlohmann::json("3")), 0u);
  EXPECT_EQ(count_field(nlohmann::json::array({1}), "step"), 0u);
  EXPECT_EQ(text_field(nlohmann::json::array(), "type", "?"), "?");
}

}  // namespace
}  // namespace loom::dash
