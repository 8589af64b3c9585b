#include "ftbench/train/stop_signals.h"

#include <atomic>

namespace ftbench::train {
namespace {

volatile std::sig_atomic_t g_received = 0;
std::atomic<bool> g_installed{false};

extern "C" void record_stop_signal(int signal) {
  if (g_received == 0) g_received = signal;
}

}  // namespace

StopSignals::StopSignals() {
  if (g_installed.exchange(true)) throw std::logic_error("StopSignals: one already exists");
  g_received = 0;
  struct sigaction action {};
  action.sa_handler = record_stop_signal;
  sigemptyset(&action.sa_mask);
  // SA_RESETHAND: the handler runs once; the next signal gets the default action. SA_RESTART:
  // a system call it interrupts (a read of the data file, a write) resumes rather than failing.
  action.sa_flags = SA_RESETHAND | SA_RESTART;
  sigaction(SIGTERM, &action, &previous_term_);
  sigaction(SIGINT, &action, &previous_int_);
}

StopSignals::~StopSignals() {
  sigaction(SIGTERM, &previous_term_, nullptr);
  sigaction(SIGINT, &previous_int_, nullptr);
  g_installed = false;
}

int StopSignals::received() const { return g_received; }

std::string StopSignals::name(int signal) {
  if (signal == SIGTERM) return "SIGTERM";
  if (signal == SIGINT) return "SIGINT";
  return "signal " + std::to_string(signal);
}

}  // namespace ftbench::train
