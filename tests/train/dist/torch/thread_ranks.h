// Shared by the dist tests: ranks of a process group run as threads of this process over one
// c10d HashStore (Gloo on 127.0.0.1), and per-rank checks gathered from every thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include "train/dist/torch/communicator.h"

namespace ftbench::dist::testing {

inline CommunicatorOptions short_timeouts() {
  CommunicatorOptions o;
  o.init_timeout = std::chrono::seconds(20);
  o.timeout = std::chrono::seconds(20);
  return o;
}

// Runs `body` as ranks 0..n-1, one thread each; rethrows the first rank's exception. The ranks
// wait for each other before `body`: a rank whose body throws at once (a refused argument) would
// otherwise close its connections while another rank is still connecting the mesh, and that
// rank's connection error, not the refusal, would be the first rank's exception.
inline void run_ranks(int64_t n, const std::function<void(Communicator&)>& body,
                      CommunicatorOptions options = short_timeouts()) {
  const std::string prefix = "test/";
  auto store = c10::make_intrusive<c10d::HashStore>();
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  for (int64_t r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      std::unique_ptr<Communicator> c;
      try {
        c = std::make_unique<Communicator>(store, prefix, r, n, "127.0.0.1", options);
      } catch (...) {
        errors[static_cast<std::size_t>(r)] = std::current_exception();
      }
      // Through the store, not a collective, so that the collectives' counters stay the
      // body's; a rank that could not connect arrives too.
      store->add("test-connected", 1);
      while (store->add("test-connected", 0) < n) {
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      if (!c) return;
      try {
        body(*c);
      } catch (...) {
        errors[static_cast<std::size_t>(r)] = std::current_exception();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (const std::exception_ptr& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

// Each rank's check of its own result; failures are gathered from every thread.
class RankChecks {
 public:
  void expect_equal(const at::Tensor& got, const at::Tensor& want, int64_t rank) {
    if (got.scalar_type() == want.scalar_type() && got.sizes() == want.sizes() &&
        at::equal(got, want)) {
      return;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    std::ostringstream s;
    s << "rank " << rank << ": got " << got << " want " << want;
    failures_.push_back(s.str());
  }
  void verify() const {
    for (const std::string& f : failures_) ADD_FAILURE() << f;
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> failures_;
};

}  // namespace ftbench::dist::testing
