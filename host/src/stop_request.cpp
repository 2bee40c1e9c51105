// SIGINT/SIGTERM → finish the step, checkpoint, exit 0; see stop_request.hpp.
#include "loom/host/stop_request.hpp"

#include <csignal>

namespace loom::host {
namespace {

volatile std::sig_atomic_t g_stop = 0;

extern "C" void on_stop_signal(int signal_number) {
  if (g_stop != 0) {
    std::signal(signal_number, SIG_DFL);
    std::raise(signal_number);
    return;
  }
  g_stop = 1;
}

}  // namespace

void install_stop_handlers() {
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
