// The metrics stream's line protocol: client messages decode or are refused with a reason,
// addresses parse, loopback is recognised, the hello carries what loom-dash shows.
#include <gtest/gtest.h>

#include "metrics/metrics_stream_protocol.hpp"
#include "recipe/run_settings.hpp"

namespace loom::host {
namespace {

TEST(MetricsStreamProtocol, ControlMessagesRoundTrip) {
  for (RunCommand command : {RunCommand::pause, RunCommand::resume, RunCommand::checkpoint_now, RunCommand::stop}) {
    std::string line = protocol_line(make_control_message(command, 7));
    ASSERT_EQ(line.back(), '\n');
    line.pop_back();
    const ClientMessage message = parse_client_message(line);
    EXPECT_EQ(message.kind, ClientMessage::Kind::control) << line;
    EXPECT_EQ(message.command, command);
    EXPECT_EQ(message.id, 7);
  }
  EXPECT_EQ(parse_run_command("checkpoint-now"), RunCommand::checkpoint_now);
  EXPECT_FALSE(parse_run_command("checkpoint_now"));
}

TEST(MetricsStreamProtocol, AuthCarriesTheTokenAndToleratesCarriageReturn) {
  const ClientMessage message = parse_client_message(R"({"type":"auth","token":"s3cret"})" "\r");
  EXPECT_EQ(message.kind, ClientMessage::Kind::auth);
  EXPECT_EQ(message.token, "s3cret");
}

TEST(MetricsStreamProtocol, BadLinesAreInvalidWithAReason) {
  const std::pair<const char*, const char*> cases[] = {
      {"not json", "one JSON object per line"},
      {"[1,2]", "one JSON object per line"},
      {R"({"command":"stop"})", "no \"type\""},
      {R"({"type":"control","command":"explode"})", "pause, resume, checkpoint-now, stop"},
      {R"({"type":"auth","token":5})", "string \"token\""},
      {R"({"type":"subscribe"})", "unknown message type"},
  };
  for (const auto& [line, reason] : cases) {
    const ClientMessage message = parse_client_message(line);
    EXPECT_EQ(message.kind, ClientMessage::Kind::invalid) << line;
    EXPECT_NE(message.error.find(reason), std::string::npos) << line << " -> " << message.error;
  }
}

// Control messages are typed: a key of the wrong type, or one the message type does not have, makes
// the line invalid (answered with an error, never acted on) instead of being ignored or echoed.
TEST(MetricsStreamProtocol, MistypedControlMessagesAreInvalid) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"type":"control","command":"stop","id":"notnum"})",
       "\"id\" must be a non-negative integer (or absent), got \"notnum\""},
      {R"({"type":"control","command":"stop","id":-1})", "\"id\" must be a non-negative integer"},
      {R"({"type":"control","command":"stop","id":1.5})", "\"id\" must be a non-negative integer"},
      {R"({"type":"control","command":"stop","id":null})", "\"id\" must be a non-negative integer"},
      {R"({"type":"control","command":"stop","id":[1]})", "\"id\" must be a non-negative integer"},
      {R"({"type":"control","command":"stop","id":{"n":1}})", "\"id\" must be a non-negative integer"},
      {R"({"type":"control","command":"stop","id":1e300})", "\"id\" must be a non-negative integer"},
      {R"({"type":"control","command":5,"id":1})", "one of pause, resume, checkpoint-now, stop, got 5"},
      {R"({"type":"control","command":["stop"]})", "got [\"stop\"]"},
      {R"({"type":"control","command":"stop","idd":1})", "control: unknown key \"idd\""},
      {R"({"type":"control","command":"stop","force":true})", "control: unknown key \"force\""},
      {R"({"type":"auth","token":"t","user":"x"})", "auth: unknown key \"user\""},
      {R"({"type":5})", "no \"type\""},
  };
  for (const auto& [line, reason] : cases) {
    const ClientMessage message = parse_client_message(line);
    EXPECT_EQ(message.kind, ClientMessage::Kind::invalid) << line;
    EXPECT_NE(message.error.find(reason), std::string::npos) << line << " -> " << message.error;
  }
  const ClientMessage without_id = parse_client_message(R"({"type":"control","command":"pause"})");
  EXPECT_EQ(without_id.kind, ClientMessage::Kind::control);
  EXPECT_TRUE(without_id.id.is_null());
  const ClientMessage largest =
      parse_client_message(R"({"type":"control","command":"resume","id":18446744073709551615})");
  EXPECT_EQ(largest.kind, ClientMessage::Kind::control);
  EXPECT_EQ(largest.id, 18446744073709551615ull);
}

TEST(MetricsStreamProtocol, RecordsStayOneLine) {
  const nlohmann::json record{{"type", "train"}, {"step", 3}, {"note", "two\nlines"}};
  const std::string line = protocol_line(record);
  EXPECT_EQ(line.find('\n'), line.size() - 1);
  EXPECT_EQ(nlohmann::json::parse(line), record);
}

TEST(MetricsStreamProtocol, AddressesParseOrNameTheProblem) {
  EXPECT_EQ(parse_stream_address("127.0.0.1:7070").host, "127.0.0.1");
  EXPECT_EQ(parse_stream_address("127.0.0.1:7070").port, 7070);
  EXPECT_EQ(parse_stream_address("[::1]:0").host, "::1");
  EXPECT_EQ(parse_stream_address("localhost:65535").port, 65535);
  for (const char* bad : {"7070", ":7070", "host:", "host:70x", "host:65536"}) {
    try {
      parse_stream_address(bad);
      ADD_FAILURE() << bad << " was accepted";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("HOST:PORT"), std::string::npos) << e.what();
    }
  }
}

TEST(MetricsStreamProtocol, LoopbackAndNonLoopback) {
  EXPECT_TRUE(is_loopback_host("127.0.0.1"));
  EXPECT_TRUE(is_loopback_host("127.3.2.1"));
  EXPECT_TRUE(is_loopback_host("::1"));
  EXPECT_TRUE(is_loopback_host("localhost"));
  EXPECT_FALSE(is_loopback_host("0.0.0.0"));
  EXPECT_FALSE(is_loopback_host("10.1.2.3"));
  EXPECT_FALSE(is_loopback_host("::"));
  EXPECT_FALSE(is_loopback_host("cluster-node-7"));
}

TEST(MetricsStreamProtocol, NonLoopbackListenNeedsAToken) {
  EXPECT_EQ(metrics_listen_problem("127.0.0.1:7070", ""), "");
  EXPECT_EQ(metrics_listen_problem("0.0.0.0:7070", "t0ken"), "");
  EXPECT_NE(metrics_listen_problem("0.0.0.0:7070", "").find("[metrics] token"), std::string::npos);
  EXPECT_NE(metrics_listen_problem("0.0.0.0", "").find("HOST:PORT"), std::string::npos);
}

TEST(MetricsStreamProtocol, HelloNamesTheRun) {
  RunSettings settings;
  settings.name = "tiny";
  settings.steps = 500;
  const nlohmann::json hello =
      make_hello_message(settings, "[precision]\ncomponent = \"bf16-mixed\"\n", 4, 120);
  EXPECT_EQ(hello["type"], "hello");
  EXPECT_EQ(hello["run"], "tiny");
  EXPECT_EQ(hello["world_size"], 4);
  EXPECT_EQ(hello["step"], 120);
  EXPECT_EQ(hello["total_steps"], 500);
  EXPECT_EQ(hello["precision"], "bf16-mixed");
  EXPECT_EQ(hello["protocol"], kMetricsStreamProtocol);
  EXPECT_TRUE(hello.contains("sdk_version"));
  EXPECT_EQ(hello["recipe"], "[precision]\ncomponent = \"bf16-mixed\"\n");
}

}  // namespace
}  // namespace loom::host
