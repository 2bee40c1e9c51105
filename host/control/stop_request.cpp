// SIGINT/SIGTERM → finish the step, checkpoint, exit 0; see stop_request.hpp for why signals go to
// a thread of their own.
#include "control/stop_request.hpp"

#include <pthread.h>
#include <signal.h>

#include <atomic>
#include <csignal>
#include <thread>

namespace loom::host {
namespace {

volatile std::sig_atomic_t g_stop = 0;
std::atomic<bool> g_armed{false};
std::atomic<bool> g_routed{false};

sigset_t stop_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  return set;
}

/// Dies of `signal_number` as if no handler existed.
[[noreturn]] void die_of(int signal_number) {
  std::signal(signal_number, SIG_DFL);
  const sigset_t set = stop_signals();
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);  // blocked in this thread when routed
  std::raise(signal_number);
  std::_Exit(128 + signal_number);  // not reached: the default action of both is to terminate
}

extern "C" void on_stop_signal(int signal_number) {
  if (g_stop != 0) die_of(signal_number);
  g_stop = 1;
}

void wait_for_stop_signals(sigset_t set) {
  for (;;) {
    int signal_number = 0;
    if (sigwait(&set, &signal_number) != 0) continue;
    if (!g_armed.load() || g_stop != 0) die_of(signal_number);
    g_stop = 1;
  }
}

}  // namespace

void route_stop_signals_to_a_thread() {
  if (g_routed.exchange(true)) return;
  const sigset_t set = stop_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  std::thread(wait_for_stop_signals, set).detach();
}

void install_stop_handlers() {
  g_armed = true;
  if (g_routed.load()) return;
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

bool stop_requested() {
  return g_stop != 0;
}
void request_stop() {
  g_stop = 1;
}
void clear_stop_request() {
  g_stop = 0;
}

}  // namespace loom::host
