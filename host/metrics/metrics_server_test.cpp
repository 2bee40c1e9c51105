// MetricsServer over real loopback sockets: hello and history on connect, live records, a stalled
// client's oldest records dropped (and counted to it) without slowing the publisher, control
// commands acknowledged to the client that sent them, mistyped ones refused, a pause left behind by
// a disconnected client undone. (Who is admitted, and the bounds against
// misbehaving clients: metrics_server_admission_test.cpp.)
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "metrics/metrics_server.hpp"
#include "metrics/metrics_stream_protocol.hpp"
#include "metrics/metrics_stream_test_client.hpp"

namespace loom::host {
namespace {
using stream_test::StreamTestClient;

nlohmann::json record(uint64_t step) {
  return {{"type", "train"}, {"step", step}, {"loss", 10.0 / static_cast<double>(step + 1)}};
}

// A client that has sent the server's token.
class Client : public StreamTestClient {
 public:
  Client(const MetricsServer& server, int receive_buffer = 0) : StreamTestClient(server.local_endpoint(), receive_buffer) {
    send(make_auth_message(server.token()));
  }
  nlohmann::json next() { return next_or_timeout(30); }
};

nlohmann::json hello() {
  return {{"type", "hello"}, {"run", "test"}, {"step", 0}, {"total_steps", 100}};
}

TEST(MetricsServer, NewClientGetsHelloHistoryThenLiveRecords) {
  RunControl control;
  MetricsServer server({"127.0.0.1:0", "", 64}, control);
  server.on_start(hello());
  for (uint64_t step = 1; step <= 3; ++step) server.on_record(record(step));
  Client client(server);
  const nlohmann::json greeting = client.next();
  EXPECT_EQ(greeting["type"], "hello");
  EXPECT_EQ(greeting["step"], 3) << "the hello names the current step";
  for (uint64_t step = 1; step <= 3; ++step) EXPECT_EQ(client.next()["step"], step);
  server.on_record(record(4));
  EXPECT_EQ(client.next(), record(4));
  server.on_end({{"type", "end"}, {"step", 4}});
  EXPECT_EQ(client.next()["type"], "end");
  server.shutdown();
  EXPECT_TRUE(client.next().is_null()) << "shutdown closes the connection cleanly";
  EXPECT_EQ(server.statistics().records, 4u);
}

TEST(MetricsServer, StalledClientLosesOldestRecordsAndIsToldWithoutSlowingThePublisher) {
  RunControl control;
  MetricsServer server({"127.0.0.1:0", "", 32}, control);
  server.on_start(hello());
  Client stalled(server, 4096);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // admitted before the flood
  const std::string padding(900, 'x');
  const int count = 20000;  // ~18 MB: far beyond the socket buffers
  const auto start = std::chrono::steady_clock::now();
  for (int step = 1; step <= count; ++step) {
    nlohmann::json r = record(static_cast<uint64_t>(step));
    r["padding"] = padding;
    server.on_record(r);
  }
  const double publish_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the stream thread catches up

  uint64_t dropped = 0, last_step = 0, received = 0;
  EXPECT_EQ(stalled.next()["type"], "hello");
  while (last_step < static_cast<uint64_t>(count)) {
    const nlohmann::json message = stalled.next();
    ASSERT_FALSE(message.is_null());
    if (message["type"] == "dropped") dropped += message["count"].get<uint64_t>();
    if (message["type"] == "train") {
      EXPECT_GT(message["step"].get<uint64_t>(), last_step);
      last_step = message["step"].get<uint64_t>(), ++received;
    }
  }
  EXPECT_GT(dropped, 0u);
  EXPECT_EQ(received + dropped, static_cast<uint64_t>(count)) << "every record is either delivered or counted";
  EXPECT_EQ(server.statistics().dropped, dropped);
  // The training thread only formats and hands over each line: microseconds, stalled reader or not.
  EXPECT_LT(publish_seconds / count, 200e-6) << publish_seconds << " s for " << count << " records";
}

TEST(MetricsServer, ControlIsAppliedAtABoundaryAndAcknowledgedToItsSender) {
  RunControl control;
  MetricsServer server({"127.0.0.1:0", "", 64}, control);
  server.on_start(hello());
  Client client(server);
  EXPECT_EQ(client.next()["type"], "hello");
  client.send(make_control_message(RunCommand::checkpoint_now, 5));
  RunControl::Boundary boundary;
  for (int i = 0; i < 500 && !boundary.checkpoint_now; ++i) {
    boundary = control.at_step_boundary(10);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_TRUE(boundary.checkpoint_now);
  control.acknowledge(RunCommand::checkpoint_now, 10, {{"checkpoint", "runs/x/checkpoints/step-000010"}});
  const nlohmann::json ack = client.next();
  EXPECT_EQ(ack["type"], "ack");
  EXPECT_EQ(ack["command"], "checkpoint-now");
  EXPECT_EQ(ack["id"], 5);
  EXPECT_EQ(ack["step"], 10);
  EXPECT_EQ(ack["checkpoint"], "runs/x/checkpoints/step-000010");

  client.send({{"type", "control"}, {"command", "explode"}});
  const nlohmann::json error = client.next();
  EXPECT_EQ(error["type"], "error");
  EXPECT_NE(error["message"].get<std::string>().find("checkpoint-now"), std::string::npos);
}

// A control message with a key of the wrong type is answered with an error and never reaches the
// run: "id": "notnum" in a stop used to stop it.
TEST(MetricsServer, MistypedControlIsRefusedAndNeverApplied) {
  RunControl control;
  MetricsServer server({"127.0.0.1:0", "", 64}, control);
  server.on_start(hello());
  Client client(server);
  EXPECT_EQ(client.next()["type"], "hello");
  client.send(nlohmann::json::parse(R"({"type":"control","command":"stop","id":"notnum"})"));
  client.send(nlohmann::json::parse(R"({"type":"control","command":"pause","id":1,"force":true})"));
  const nlohmann::json first = client.next();
  EXPECT_EQ(first["type"], "error");
  EXPECT_NE(first["message"].get<std::string>().find("\"id\" must be a non-negative integer"),
            std::string::npos)
      << first;
  const nlohmann::json second = client.next();
  EXPECT_EQ(second["type"], "error");
  EXPECT_NE(second["message"].get<std::string>().find("unknown key \"force\""), std::string::npos) << second;
  const RunControl::Boundary boundary = control.at_step_boundary(4);
  EXPECT_FALSE(boundary.stop);
  EXPECT_FALSE(control.paused());
  client.send(make_control_message(RunCommand::checkpoint_now, 2));  // the connection still works
  RunControl::Boundary later;
  for (int i = 0; i < 500 && !later.checkpoint_now; ++i) {
    later = control.at_step_boundary(5);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_TRUE(later.checkpoint_now);
}

// A run paused by a client that then disconnects resumes (nobody would be left to resume it); the
// clients still attached are told why.
TEST(MetricsServer, APausedRunResumesWhenThePausingClientDisconnects) {
  RunControl control;
  MetricsServer server({"127.0.0.1:0", "", 64}, control);
  server.on_start(hello());
  Client watcher(server);
  EXPECT_EQ(watcher.next()["type"], "hello");
  auto pauser = std::make_unique<Client>(server);
  EXPECT_EQ(pauser->next()["type"], "hello");
  pauser->send(make_control_message(RunCommand::pause, 1));
  std::atomic<bool> finish{false};
  std::atomic<int> boundaries{0};
  std::thread training([&] {  // the training thread's step boundaries
    while (!finish) {
      control.at_step_boundary(20);
      ++boundaries;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  });
  EXPECT_EQ(pauser->next()["command"], "pause");
  const int parked_at = boundaries;
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(boundaries, parked_at) << "the run stays paused while its client is attached";
  pauser.reset();  // disconnects
  const nlohmann::json resumed = watcher.next();
  for (int i = 0; i < 2500 && boundaries == parked_at; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  EXPECT_GT(boundaries, parked_at) << "the run goes on";
  EXPECT_FALSE(control.paused());
  finish = true;
  training.join();
  EXPECT_EQ(resumed["type"], "ack");
  EXPECT_EQ(resumed["command"], "resume");
  EXPECT_EQ(resumed["step"], 20);
  EXPECT_TRUE(resumed["id"].is_null());
  EXPECT_NE(resumed.value("reason", "").find("went away"), std::string::npos) << resumed;
}

TEST(MetricsServer, UnusableAddressIsAClearError) {
  RunControl control;
  try {
    MetricsServer server({"203.0.113.9:7070", "t", 64}, control);  // TEST-NET-3: not this machine
    ADD_FAILURE() << "bound to an address this machine does not have";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("203.0.113.9:7070"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loom::host
