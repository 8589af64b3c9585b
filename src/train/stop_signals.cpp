#include "train/stop_signals.h"

#include <unistd.h>

#include <atomic>

namespace ftbench::train {
namespace {

volatile std::sig_atomic_t g_received = 0;
volatile std::sig_atomic_t g_immediate = 0;
volatile std::sig_atomic_t g_checkpoint_on_stop = 0;
std::atomic<bool> g_installed{false};

// Async-signal-safe: write(2) of fixed text, _exit(2).
void say(const char* text) {
  std::size_t n = 0;
  while (text[n] != '\0') ++n;
  const ssize_t ignored = ::write(STDERR_FILENO, text, n);
  (void)ignored;
}

const char* signal_word(int signal) {
  if (signal == SIGTERM) return "SIGTERM";
  if (signal == SIGHUP) return "SIGHUP";
  return "SIGINT";
}

[[noreturn]] void end_now(int signal) {
  say("\nftbench: ");
  say(signal_word(signal));
  say(g_received != 0 && g_immediate == 0
          ? ": a second stop signal: ending at once, without a checkpoint\n"
          : ": stopped\n");
  ::_exit(128 + signal);
}

extern "C" void on_stop_signal(int signal) {
  if (g_immediate != 0 || g_received != 0) end_now(signal);
  g_received = signal;
  say("\nftbench: ");
  say(signal_word(signal));
  // Only what will happen: before the first step there is nothing to save.
  say(g_checkpoint_on_stop != 0
          ? " received: stopping after the step in flight, with a checkpoint; send it again to "
            "stop at once\n"
          : " received: stopping after the set-up phase in flight (no step made yet: nothing to "
            "checkpoint); send it again to stop at once\n");
}

// The stop signals: SIGTERM, SIGINT and SIGHUP (the terminal or SSH session closed).
void add_stop_signals(sigset_t* set) {
  sigaddset(set, SIGTERM);
  sigaddset(set, SIGINT);
  sigaddset(set, SIGHUP);
}

void set_blocked(int how, sigset_t* previous) {
  sigset_t all;
  sigemptyset(&all);
  add_stop_signals(&all);
  sigprocmask(how, &all, previous);
}

}  // namespace

StopSignals::StopSignals(Mode mode) {
  if (g_installed.exchange(true)) throw std::logic_error("StopSignals: one already exists");
  g_received = 0;
  g_immediate = mode == Mode::kImmediate ? 1 : 0;
  g_checkpoint_on_stop = 0;
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  // All three blocked while the handler runs: a second one waits for the first to be
  // recorded. SA_RESTART: a system call it interrupts (a read of the data file, a write)
  // resumes rather than failing.
  sigemptyset(&action.sa_mask);
  add_stop_signals(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &action, &previous_term_);
  sigaction(SIGINT, &action, &previous_int_);
  sigaction(SIGHUP, &action, &previous_hup_);
  // Last: what arrived while they were blocked (by the launcher, across exec) is delivered now.
  set_blocked(SIG_UNBLOCK, &previous_mask_);
}

StopSignals::~StopSignals() {
  sigaction(SIGTERM, &previous_term_, nullptr);
  sigaction(SIGINT, &previous_int_, nullptr);
  sigaction(SIGHUP, &previous_hup_, nullptr);
  sigprocmask(SIG_SETMASK, &previous_mask_, nullptr);
  g_installed = false;
}

void StopSignals::stop_immediately_from_now() {
  g_immediate = 1;
  if (const int signal = g_received; signal != 0) end_now(signal);
}

void StopSignals::checkpoint_on_stop() { g_checkpoint_on_stop = 1; }

int StopSignals::received() const { return g_received; }

bool StopSignals::stop_requested() { return g_received != 0; }

std::string StopSignals::name(int signal) {
  if (signal == SIGTERM) return "SIGTERM";
  if (signal == SIGINT) return "SIGINT";
  if (signal == SIGHUP) return "SIGHUP";
  return "signal " + std::to_string(signal);
}

bool StopSignals::block_before_exec() {
  sigset_t all;
  sigemptyset(&all);
  add_stop_signals(&all);
  return sigprocmask(SIG_BLOCK, &all, nullptr) == 0;
}

void StopSignals::unblock() { set_blocked(SIG_UNBLOCK, nullptr); }

void ignore_signals_that_would_kill_a_run() {
  std::signal(SIGPIPE, SIG_IGN);
  std::signal(SIGXFSZ, SIG_IGN);
}

}  // namespace ftbench::train
