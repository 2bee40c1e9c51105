// Who the metrics stream admits, over real loopback sockets: without a configured token a random
// one is made and written owner-only beside the endpoint; nothing (not even the hello) reaches a
// client before the right token; a wrong or absent token, silence past the deadline, clients
// beyond the cap and requests beyond the rate are refused with one error line, counted, and the
// refused client's commands never reach the run. (Multi-user checks: tests/e2e.)
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>
#include <vector>

#include "metrics/metrics_server.hpp"
#include "metrics/metrics_stream_credentials.hpp"
#include "metrics/metrics_stream_protocol.hpp"
#include "metrics/metrics_stream_test_client.hpp"
#include "recipe/errors.hpp"
#include "recipe/run_settings.hpp"

namespace loom::host {
namespace {
namespace fs = std::filesystem;
using stream_test::StreamTestClient;
using Clock = std::chrono::steady_clock;

nlohmann::json hello() {
  return {{"type", "hello"}, {"run", "test"}, {"step", 0}, {"total_steps", 100}};
}

MetricsStreamSettings loopback(size_t max_clients = 8, double auth_timeout = 5, double rate = 20) {
  MetricsStreamSettings s;
  s.listen = "127.0.0.1:0";
  s.client_queue = 64;
  s.max_clients = max_clients;
  s.auth_timeout_seconds = auth_timeout;
  s.max_requests_per_second = rate;
  return s;
}

fs::path fresh_directory(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("loom-stream-admission-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

std::string first_line(const fs::path& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

// Waits (at most 5 s) until `done` holds; the stream thread acts asynchronously.
template <typename Predicate>
bool eventually(Predicate done) {
  const auto deadline = Clock::now() + std::chrono::seconds(5);
  while (!done() && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return done();
}

TEST(MetricsServerAdmission, WithoutAConfiguredTokenARandomOneIsWrittenOwnerOnlyBesideTheEndpoint) {
  const fs::path run_dir = fresh_directory("files");
  // A stale token file readable by everyone is replaced, not reused.
  { std::ofstream(run_dir / kStreamTokenFile) << "old\n"; }
  fs::permissions(run_dir / kStreamTokenFile, fs::perms::all);
  RunControl control;
  MetricsStreamSettings settings = loopback();
  settings.run_directory = run_dir;
  auto server = std::make_unique<MetricsServer>(settings, control);
  const std::string token = server->token();
  EXPECT_EQ(token.size(), 64u);
  EXPECT_EQ(token.find_first_not_of("0123456789abcdef"), std::string::npos) << token;
  RunControl other_control;
  EXPECT_NE(MetricsServer(loopback(), other_control).token(), token) << "every run makes its own token";

  struct stat token_stat{}, endpoint_stat{};
  ASSERT_EQ(::stat((run_dir / kStreamTokenFile).c_str(), &token_stat), 0);
  EXPECT_EQ(token_stat.st_mode & 0777, 0600u) << "only the owner may read the token";
  EXPECT_EQ(token_stat.st_uid, ::geteuid());
  ASSERT_EQ(::stat((run_dir / kStreamEndpointFile).c_str(), &endpoint_stat), 0);
  EXPECT_EQ(endpoint_stat.st_mode & 0777, 0644u);
  EXPECT_EQ(first_line(run_dir / kStreamTokenFile), token);
  EXPECT_EQ(first_line(run_dir / kStreamEndpointFile), server->local_endpoint());
  const FoundStreamCredentials found = read_stream_credentials(run_dir);
  EXPECT_EQ(found.endpoint, server->local_endpoint());
  EXPECT_EQ(found.token, token);

  server->on_start(hello());
  StreamTestClient client(found.endpoint);
  client.send(make_auth_message(found.token));
  EXPECT_EQ(client.next_or_timeout()["type"], "hello") << "the token from the run directory admits";

  server->shutdown();
  EXPECT_FALSE(fs::exists(run_dir / kStreamTokenFile)) << "a stopped stream leaves no token behind";
  EXPECT_FALSE(fs::exists(run_dir / kStreamEndpointFile));
  server.reset();
  fs::remove_all(run_dir);
}

TEST(MetricsServerAdmission, NothingBeforeTheTokenThenOneErrorLineAndTheCommandNeverRuns) {
  RunControl control;
  MetricsStreamSettings settings = loopback();
  settings.token = "s3cret";
  MetricsServer server(settings, control);
  server.on_start(hello());
  server.on_record({{"type", "train"}, {"step", 1}});

  StreamTestClient quiet(server.local_endpoint());
  EXPECT_FALSE(quiet.next(0.3).has_value()) << "no hello, no record before the token";

  StreamTestClient wrong(server.local_endpoint());
  wrong.send(make_auth_message("guess"));
  EXPECT_EQ(wrong.next_or_timeout(), make_error_message("wrong token"));
  EXPECT_TRUE(wrong.next_or_timeout().is_null()) << "a refused client is disconnected";

  StreamTestClient absent(server.local_endpoint());
  absent.send(make_control_message(RunCommand::stop, 1));
  const nlohmann::json needs_token = absent.next_or_timeout();
  EXPECT_EQ(needs_token["type"], "error");
  EXPECT_NE(needs_token["message"].get<std::string>().find("requires a token"), std::string::npos) << needs_token;
  EXPECT_TRUE(absent.next_or_timeout().is_null());

  StreamTestClient right(server.local_endpoint());
  right.send(make_auth_message("s3cret"));
  EXPECT_EQ(right.next_or_timeout()["type"], "hello");
  EXPECT_EQ(right.next_or_timeout()["step"], 1);
  EXPECT_EQ(server.statistics().refused_token, 2u);
  // The refused stop never reached the run.
  EXPECT_FALSE(control.at_step_boundary(1).stop);
}

TEST(MetricsServerAdmission, ASilentConnectionIsClosedAtTheDeadline) {
  RunControl control;
  MetricsServer server(loopback(8, 0.4), control);
  server.on_start(hello());
  const auto start = Clock::now();
  StreamTestClient silent(server.local_endpoint());
  const nlohmann::json error = silent.next_or_timeout(10);
  const double waited = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_EQ(error["type"], "error");
  EXPECT_NE(error["message"].get<std::string>().find("no token within 0.4 s"), std::string::npos) << error;
  EXPECT_TRUE(silent.next_or_timeout().is_null());
  EXPECT_GE(waited, 0.35);
  EXPECT_LT(waited, 3.0) << "the deadline holds";
  EXPECT_EQ(server.statistics().refused_silent, 1u);
}

TEST(MetricsServerAdmission, TheCapHoldsForAdmittedAndWaitingClients) {
  RunControl control;
  const size_t cap = 3;
  MetricsServer server(loopback(cap, 30), control);
  server.on_start(hello());
  std::vector<std::unique_ptr<StreamTestClient>> admitted;
  for (size_t i = 0; i < cap; ++i) {
    admitted.push_back(std::make_unique<StreamTestClient>(server.local_endpoint()));
    admitted.back()->send(make_auth_message(server.token()));
    ASSERT_EQ(admitted.back()->next_or_timeout()["type"], "hello");
  }
  StreamTestClient extra(server.local_endpoint());
  extra.send(make_auth_message(server.token()));
  const nlohmann::json full = extra.next_or_timeout();
  EXPECT_EQ(full["type"], "error");
  EXPECT_NE(full["message"].get<std::string>().find("too many clients"), std::string::npos) << full;
  EXPECT_TRUE(extra.next_or_timeout().is_null());

  // 40 silent connections at once: at most `cap` wait, the oldest make room and are told why.
  std::vector<std::unique_ptr<StreamTestClient>> flood;
  for (int i = 0; i < 40; ++i) flood.push_back(std::make_unique<StreamTestClient>(server.local_endpoint()));
  ASSERT_TRUE(eventually([&] { return server.statistics().refused_over_cap >= 1 + 40 - cap; }))
      << server.statistics().refused_over_cap;
  const nlohmann::json displaced = flood.front()->next_or_timeout();
  EXPECT_NE(displaced.value("message", "").find("awaiting authentication"), std::string::npos) << displaced;
  EXPECT_LE(server.statistics().peak_connections, 2 * cap) << "admitted + awaiting authentication";

  // One admitted client leaves: the owner gets in past the flood still waiting (retrying, as
  // loom-dash does, until the server has seen the other one go).
  admitted.pop_back();
  nlohmann::json greeting = nlohmann::json::object();
  for (int attempt = 0; attempt < 20 && greeting.value("type", "") != "hello"; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    StreamTestClient owner(server.local_endpoint());
    owner.send(make_auth_message(server.token()));
    greeting = owner.next_or_timeout(5);
    if (greeting.is_null()) greeting = nlohmann::json::object();  // closed without a word: try again
  }
  EXPECT_EQ(greeting["type"], "hello") << greeting;
  const MetricsServer::Statistics s = server.statistics();
  EXPECT_EQ(s.refused, s.refused_over_cap);
  EXPECT_GE(s.clients, cap + 1 + 40 + 1);
  EXPECT_LE(s.peak_connections, 2 * cap);
}

TEST(MetricsServerAdmission, AClientBeyondTheRequestRateIsDisconnected) {
  RunControl control;
  MetricsServer server(loopback(8, 5, 5), control);
  server.on_start(hello());
  StreamTestClient client(server.local_endpoint());
  client.send(make_auth_message(server.token()));
  ASSERT_EQ(client.next_or_timeout()["type"], "hello");
  std::string burst;
  for (int i = 0; i < 40; ++i) burst += protocol_line(make_auth_message(server.token()));  // harmless requests
  client.send_text(burst);
  nlohmann::json message = nlohmann::json::object();
  for (int i = 0; i < 60 && message.is_object() && message.value("type", "") != "error"; ++i)
    message = client.next_or_timeout();  // the replies to the requests within the burst, then the error
  ASSERT_TRUE(message.is_object()) << "closed without an error line";
  EXPECT_NE(message.value("message", "").find("more than 5 requests a second"), std::string::npos) << message;
  EXPECT_TRUE(client.next_or_timeout().is_null());
  EXPECT_EQ(server.statistics().disconnected, 1u);

  // Within the rate a client stays.
  StreamTestClient polite(server.local_endpoint());
  polite.send(make_auth_message(server.token()));
  ASSERT_EQ(polite.next_or_timeout()["type"], "hello");
  for (int i = 0; i < 8; ++i) {
    polite.send(make_auth_message(server.token()));
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  }
  EXPECT_FALSE(polite.next(0.2).has_value()) << "no error for 4 requests a second";
  EXPECT_EQ(server.statistics().disconnected, 1u);
}

TEST(MetricsServerAdmission, AnOverlongFirstLineIsRefused) {
  RunControl control;
  MetricsServer server(loopback(), control);
  server.on_start(hello());
  StreamTestClient client(server.local_endpoint());
  client.send_text(std::string(70 * 1024, 'x'));
  const nlohmann::json error = client.next_or_timeout();
  EXPECT_EQ(error["type"], "error");
  EXPECT_EQ(server.statistics().refused_token, 1u);
}

TEST(MetricsServerAdmission, RecipeKeysReachTheStreamAndBadValuesNameTheKey) {
  const fs::path dir = fresh_directory("recipe");
  const fs::path recipe = dir / "bounded.toml";
  std::ofstream(recipe) << "[run]\nname = \"bounded\"\noutput_dir = \"" << (dir / "runs").string()
                        << "\"\n[metrics]\nlisten = \"127.0.0.1:0\"\nmax_clients = 2\nauth_timeout_s = 1.5\n"
                           "max_requests_per_s = 3\n";
  const MetricsStreamSettings s = metrics_stream_settings(read_run_settings(load_recipe(recipe.string())));
  EXPECT_EQ(s.listen, "127.0.0.1:0");
  EXPECT_EQ(s.max_clients, 2u);
  EXPECT_DOUBLE_EQ(s.auth_timeout_seconds, 1.5);
  EXPECT_DOUBLE_EQ(s.max_requests_per_second, 3);
  EXPECT_EQ(s.run_directory, dir / "runs" / "bounded");
  EXPECT_TRUE(s.token.empty()) << "none configured: the server makes one";

  std::ofstream(recipe) << "[metrics]\nlisten = \"127.0.0.1:0\"\nmax_clients = 0\n";
  try {
    read_run_settings(load_recipe(recipe.string()));
    ADD_FAILURE() << "max_clients = 0 was accepted";
  } catch (const RecipeError& e) {
    EXPECT_NE(std::string(e.what()).find("max_clients"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bounded.toml"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace loom::host
