// RunControl: commands take effect only at step boundaries; pause parks the boundary until resume
// (or stop); every command is acknowledged after it took effect.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "control/run_control.hpp"
#include "control/stop_request.hpp"

namespace loom::host {
namespace {

TEST(RunControl, NothingQueuedIsAFreeBoundary) {
  RunControl control;
  const RunControl::Boundary b = control.at_step_boundary(3);
  EXPECT_FALSE(b.checkpoint_now);
  EXPECT_FALSE(b.stop);
}

TEST(RunControl, PauseParksTheBoundaryUntilResume) {
  RunControl control;
  std::vector<nlohmann::json> acks;
  std::mutex acks_mutex;
  auto reply = [&](const nlohmann::json& ack) {
    std::lock_guard lock(acks_mutex);
    acks.push_back(ack);
  };
  control.submit(RunCommand::pause, reply);
  std::thread resumer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    control.submit(RunCommand::resume, reply);
  });
  const auto start = std::chrono::steady_clock::now();
  control.at_step_boundary(7);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  resumer.join();
  EXPECT_GE(waited, 0.25);
  EXPECT_FALSE(control.paused());
  ASSERT_EQ(acks.size(), 2u);
  EXPECT_EQ(acks[0]["command"], "pause");
  EXPECT_EQ(acks[0]["step"], 7);
  EXPECT_EQ(acks[1]["command"], "resume");
}

TEST(RunControl, StopEndsAPauseAndIsAcknowledgedAfterTheFinalCheckpoint) {
  RunControl control;
  std::vector<std::string> acks;
  control.submit(RunCommand::pause, [&](const nlohmann::json& a) { acks.push_back(a["command"]); });
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    control.submit(RunCommand::stop, [&](const nlohmann::json& a) { acks.push_back(a["command"].get<std::string>() + "@" + a["checkpoint"].get<std::string>()); });
  });
  const RunControl::Boundary b = control.at_step_boundary(4);
  stopper.join();
  EXPECT_TRUE(b.stop);
  EXPECT_EQ(acks, std::vector<std::string>{"pause"}) << "stop is acknowledged only once it is done";
  control.acknowledge(RunCommand::stop, 4, {{"checkpoint", "ckpt"}});
  EXPECT_EQ(acks, (std::vector<std::string>{"pause", "stop@ckpt"}));
}

TEST(RunControl, StopSignalWhilePausedReleasesTheBoundary) {
  RunControl control;
  control.submit(RunCommand::pause, [](const nlohmann::json&) {});
  std::thread signaller([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    request_stop();
  });
  control.at_step_boundary(1);
  signaller.join();
  EXPECT_TRUE(stop_requested());
  clear_stop_request();
}

}  // namespace
}  // namespace loom::host
