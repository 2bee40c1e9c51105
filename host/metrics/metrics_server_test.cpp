// MetricsServer over real loopback sockets: hello and history on connect, live records, tokens
// refused, a stalled client's oldest records dropped (and counted to it) without slowing the
// publisher, control commands acknowledged to the client that sent them.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include <boost/asio.hpp>

#include "metrics/metrics_server.hpp"

namespace loom::host {
namespace {
namespace asio = boost::asio;
using tcp = asio::ip::tcp;

nlohmann::json record(uint64_t step) {
  return {{"type", "train"}, {"step", step}, {"loss", 10.0 / static_cast<double>(step + 1)}};
}

// A blocking line client.
class Client {
 public:
  explicit Client(const std::string& endpoint, int receive_buffer = 0) {
    const StreamAddress address = parse_stream_address(endpoint);
    socket_.open(tcp::v4());
    if (receive_buffer > 0) socket_.set_option(asio::socket_base::receive_buffer_size(receive_buffer));
    socket_.connect({asio::ip::make_address(address.host), address.port});
  }
  void send(const nlohmann::json& message) { asio::write(socket_, asio::buffer(protocol_line(message))); }
  /// The next line as JSON; null at end of stream.
  nlohmann::json next() {
    boost::system::error_code error;
    asio::read_until(socket_, buffer_, '\n', error);
    if (error && buffer_.size() == 0) return nullptr;
    std::istream in(&buffer_);
    std::string line;
    std::getline(in, line);
    return nlohmann::json::parse(line);
  }

 private:
  asio::io_context io_;
  tcp::socket socket_{io_};
  asio::streambuf buffer_;
};

nlohmann::json hello() {
  return {{"type", "hello"}, {"run", "test"}, {"step", 0}, {"total_steps", 100}};
}

TEST(MetricsServer, NewClientGetsHelloHistoryThenLiveRecords) {
  RunControl control;
  MetricsServer server({"127.0.0.1:0", "", 64}, control);
  server.on_start(hello());
  for (uint64_t step = 1; step <= 3; ++step) server.on_record(record(step));
  Client client(server.local_endpoint());
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

TEST(MetricsServer, WrongOrAbsentTokenIsRefusedAndTheRightOneAdmitted) {
  RunControl control;
  MetricsServer server({"127.0.0.1:0", "s3cret", 64}, control);
  server.on_start(hello());
  server.on_record(record(1));

  Client wrong(server.local_endpoint());
  wrong.send(make_auth_message("guess"));
  const nlohmann::json refused = wrong.next();
  EXPECT_EQ(refused["type"], "error");
  EXPECT_EQ(refused["message"], "wrong token");
  EXPECT_TRUE(wrong.next().is_null()) << "a refused client is disconnected";

  Client absent(server.local_endpoint());
  absent.send(make_control_message(RunCommand::stop, 1));
  const nlohmann::json needs_token = absent.next();
  EXPECT_EQ(needs_token["type"], "error");
  EXPECT_NE(needs_token["message"].get<std::string>().find("requires a token"), std::string::npos);
  EXPECT_TRUE(absent.next().is_null());

  Client right(server.local_endpoint());
  right.send(make_auth_message("s3cret"));
  EXPECT_EQ(right.next()["type"], "hello");
  EXPECT_EQ(right.next()["step"], 1);
  EXPECT_EQ(server.statistics().refused, 2u);
  // The refused stop never reached the run.
  EXPECT_FALSE(control.at_step_boundary(1).stop);
}

TEST(MetricsServer, StalledClientLosesOldestRecordsAndIsToldWithoutSlowingThePublisher) {
  RunControl control;
  MetricsServer server({"127.0.0.1:0", "", 32}, control);
  server.on_start(hello());
  Client stalled(server.local_endpoint(), 4096);
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
  Client client(server.local_endpoint());
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
