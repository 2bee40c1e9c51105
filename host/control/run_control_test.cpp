// RunControl: commands take effect only at step boundaries; pause parks the boundary until resume
// (or stop, or the last client that asked for the pause going away); every command is
// acknowledged after it took effect.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
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

// Runs at_step_boundary(step) on a thread of its own, as the training thread would.
class Boundary {
 public:
  Boundary(RunControl& control, uint64_t step)
      : thread_([&control, step, this] {
          control.at_step_boundary(step);
          done_ = true;
        }) {}
  ~Boundary() { thread_.join(); }
  bool done() const { return done_; }
  // True when the boundary returned within `seconds`.
  bool returns_within(double seconds) const {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
    while (!done_ && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return done_;
  }

 private:
  std::atomic<bool> done_{false};
  std::thread thread_;
};

TEST(RunControl, APauseEndsWhenTheClientThatAskedForItGoesAway) {
  RunControl control;
  std::vector<nlohmann::json> acks;
  std::mutex acks_mutex;
  auto reply = [&](const nlohmann::json& ack) {
    std::lock_guard lock(acks_mutex);
    acks.push_back(ack);
  };
  control.submit(RunCommand::pause, reply, 5);
  Boundary parked(control, 12);
  EXPECT_FALSE(parked.returns_within(0.3)) << "paused";
  control.client_gone(9, reply);  // never paused: nothing happens
  EXPECT_FALSE(parked.returns_within(0.3)) << "another client leaving does not resume";
  control.client_gone(5, reply);
  EXPECT_TRUE(parked.returns_within(5)) << "the pausing client left: the run resumes";
  EXPECT_FALSE(control.paused());
  std::lock_guard lock(acks_mutex);
  ASSERT_EQ(acks.size(), 2u);
  EXPECT_EQ(acks[1]["command"], "resume");
  EXPECT_EQ(acks[1]["step"], 12);
  EXPECT_EQ(acks[1]["paused"], false);
  EXPECT_NE(acks[1]["reason"].get<std::string>().find("went away"), std::string::npos) << acks[1];
}

TEST(RunControl, APauseHeldByTwoClientsLastsUntilBothAreGone) {
  RunControl control;
  auto ignore = [](const nlohmann::json&) {};
  control.submit(RunCommand::pause, ignore, 1);
  control.submit(RunCommand::pause, ignore, 2);
  Boundary parked(control, 3);
  control.client_gone(1, ignore);
  EXPECT_FALSE(parked.returns_within(0.3)) << "client 2 still holds the pause";
  control.client_gone(2, ignore);
  EXPECT_TRUE(parked.returns_within(5));
}

TEST(RunControl, AResumeOrAnInProcessPauseIsNotUndoneByALeavingClient) {
  RunControl control;
  auto ignore = [](const nlohmann::json&) {};
  // Paused and resumed by client 1, then paused in-process (no client): client 1 leaving is no resume.
  control.submit(RunCommand::pause, ignore, 1);
  control.submit(RunCommand::resume, ignore, 1);
  control.submit(RunCommand::pause, ignore);
  Boundary parked(control, 4);
  control.client_gone(1, ignore);
  EXPECT_FALSE(parked.returns_within(0.3)) << "the in-process pause has no client to lose";
  control.submit(RunCommand::resume, ignore);
  EXPECT_TRUE(parked.returns_within(5));
}

TEST(RunControl, APauseStillQueuedWhenItsClientLeavesNeverParks) {
  RunControl control;
  std::vector<std::string> acks;
  auto reply = [&](const nlohmann::json& ack) { acks.push_back(ack["command"]); };
  control.submit(RunCommand::pause, reply, 8);
  control.client_gone(8, reply);
  const auto start = std::chrono::steady_clock::now();
  control.at_step_boundary(2);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 0.15);
  EXPECT_FALSE(control.paused());
  EXPECT_EQ(acks, (std::vector<std::string>{"pause", "resume"}));
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
