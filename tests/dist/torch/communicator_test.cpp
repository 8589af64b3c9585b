// Every collective of dist::Communicator with exact values, for 2 and 4 ranks run as threads of
// this process over one c10d HashStore (Gloo on 127.0.0.1). Values are small integers or dyadic
// fractions, so sums are exact in any order.
#include "ftbench/dist/communicator.h"

#include <atomic>
#include <exception>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>

namespace ftbench::dist {
namespace {

CommunicatorOptions short_timeouts() {
  CommunicatorOptions o;
  o.init_timeout = std::chrono::seconds(20);
  o.timeout = std::chrono::seconds(20);
  return o;
}

// Runs `body` as ranks 0..n-1, one thread each; rethrows the first rank's exception.
void run_ranks(int64_t n, const std::function<void(Communicator&)>& body,
               CommunicatorOptions options = short_timeouts()) {
  static std::atomic<int> group_number{0};
  const std::string prefix = "test" + std::to_string(group_number++) + "/";
  auto store = c10::make_intrusive<c10d::HashStore>();
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(n));
  std::vector<std::thread> threads;
  for (int64_t r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      try {
        Communicator c(store, prefix, r, n, "127.0.0.1", options);
        body(c);
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

class Collectives : public ::testing::TestWithParam<int64_t> {};

TEST(Communicator, IsAvailableInThisBuild) { EXPECT_TRUE(available()); }

TEST_P(Collectives, AllReduceSumAverageAndMaxAreExact) {
  const int64_t n = GetParam();
  RankChecks checks;
  run_ranks(n, [&](Communicator& c) {
    const double r = double(c.rank());
    at::Tensor sum = at::tensor({r + 1, 2 * (r + 1), -0.5 * r}, at::kFloat);
    c.all_reduce_sum(sum);
    const double s = double(n * (n + 1) / 2);   // 1 + 2 + ... + n
    const double s0 = double(n * (n - 1) / 2);  // 0 + 1 + ... + n-1
    checks.expect_equal(sum, at::tensor({s, 2 * s, -0.5 * s0}, at::kFloat), c.rank());

    at::Tensor avg = at::tensor({4.0 * r, 1.0}, at::kDouble);
    c.all_reduce_avg(avg);
    checks.expect_equal(avg, at::tensor({4.0 * s0 / double(n), 1.0}, at::kDouble), c.rank());

    at::Tensor big = at::tensor({r, -r}, at::kFloat);
    c.all_reduce_max(big);
    checks.expect_equal(big, at::tensor({double(n - 1), 0.0}, at::kFloat), c.rank());

    at::Tensor count = at::tensor({int64_t(1) << 40, c.rank()}, at::kLong);
    c.all_reduce_sum(count);
    checks.expect_equal(count, at::tensor({n << 40, n * (n - 1) / 2}, at::kLong), c.rank());
  });
  checks.verify();
}

TEST_P(Collectives, Bf16TravelsAsFp32AndStaysBf16) {
  const int64_t n = GetParam();
  RankChecks checks;
  run_ranks(n, [&](Communicator& c) {
    at::Tensor t = at::full({3}, 0.25 * double(c.rank() + 1), at::kBFloat16);
    c.all_reduce_sum(t);
    checks.expect_equal(t, at::full({3}, 0.25 * double(n * (n + 1) / 2), at::kBFloat16), c.rank());
    at::Tensor a = at::full({2}, 2.0 * double(c.rank()), at::kBFloat16);
    c.all_reduce_avg(a);
    checks.expect_equal(a, at::full({2}, double(n - 1), at::kBFloat16), c.rank());
  });
  checks.verify();
}

TEST_P(Collectives, BroadcastGivesTheRootsTensor) {
  const int64_t n = GetParam();
  RankChecks checks;
  run_ranks(n, [&](Communicator& c) {
    at::Tensor t = at::full({2, 2}, double(c.rank() * 10), at::kFloat);
    c.broadcast(t, n - 1);
    checks.expect_equal(t, at::full({2, 2}, double((n - 1) * 10), at::kFloat), c.rank());
    at::Tensor b = at::full({2}, double(c.rank()) + 0.5, at::kBFloat16);
    c.broadcast(b, 0);
    checks.expect_equal(b, at::full({2}, 0.5, at::kBFloat16), c.rank());
  });
  checks.verify();
}

TEST_P(Collectives, AllGatherConcatenatesInRankOrder) {
  const int64_t n = GetParam();
  RankChecks checks;
  run_ranks(n, [&](Communicator& c) {
    const double r = double(c.rank());
    const at::Tensor got = c.all_gather(at::tensor({r, r + 10}, at::kFloat).view({1, 2}));
    std::vector<double> want;
    for (int64_t k = 0; k < n; ++k) {
      want.push_back(double(k));
      want.push_back(double(k) + 10);
    }
    checks.expect_equal(got, at::tensor(want, at::kFloat).view({n, 2}), c.rank());
    const at::Tensor bf = c.all_gather(at::full({1}, r, at::kBFloat16));
    checks.expect_equal(bf, at::arange(double(n), at::kFloat).to(at::kBFloat16), c.rank());
  });
  checks.verify();
}

TEST_P(Collectives, ReduceScatterKeepsThisRanksSliceOfTheSum) {
  const int64_t n = GetParam();
  RankChecks checks;
  run_ranks(n, [&](Communicator& c) {
    // Rank r gives [0, 1, ..., 2n-1] + r; the sum is n x [0..2n-1] + n(n-1)/2.
    const at::Tensor mine = at::arange(double(2 * n), at::kFloat) + double(c.rank());
    const at::Tensor got = c.reduce_scatter_sum(mine);
    const at::Tensor all =
        at::arange(double(2 * n), at::kFloat) * double(n) + double(n * (n - 1) / 2);
    checks.expect_equal(got, all.narrow(0, 2 * c.rank(), 2), c.rank());
  });
  checks.verify();
}

TEST_P(Collectives, ValuesOfDifferentLengthsComeBackRankByRank) {
  const int64_t n = GetParam();
  std::mutex mutex;
  std::vector<std::vector<std::vector<double>>> seen(static_cast<std::size_t>(n));
  run_ranks(n, [&](Communicator& c) {
    std::vector<double> mine(static_cast<std::size_t>(c.rank() + 1), 0.125 * double(c.rank()));
    auto all = c.all_gather_values(mine);
    std::lock_guard<std::mutex> lock(mutex);
    seen[static_cast<std::size_t>(c.rank())] = std::move(all);
  });
  for (int64_t r = 0; r < n; ++r) {
    ASSERT_EQ(seen[static_cast<std::size_t>(r)].size(), static_cast<std::size_t>(n));
    for (int64_t k = 0; k < n; ++k) {
      EXPECT_EQ(seen[static_cast<std::size_t>(r)][static_cast<std::size_t>(k)],
                std::vector<double>(static_cast<std::size_t>(k + 1), 0.125 * double(k)))
          << "rank " << r << " sees rank " << k;
    }
  }
}

TEST_P(Collectives, CountsCallsAndBytes) {
  const int64_t n = GetParam();
  std::atomic<int> checked{0};
  run_ranks(n, [&](Communicator& c) {
    at::Tensor t = at::zeros({10}, at::kFloat);
    c.all_reduce_sum(t);
    c.barrier();
    if (c.stats().calls == 2 && c.stats().bytes == 40 && c.stats().blocked_seconds >= 0.0) {
      ++checked;
    }
  });
  EXPECT_EQ(checked.load(), n);
}

INSTANTIATE_TEST_SUITE_P(Ranks, Collectives, ::testing::Values(2, 4));

TEST(Communicator, AGroupOfOneIsTheIdentity) {
  Communicator c;
  at::Tensor t = at::tensor({1.5, 2.5}, at::kFloat);
  c.all_reduce_sum(t);
  c.all_reduce_avg(t);
  c.broadcast(t, 0);
  c.barrier();
  EXPECT_TRUE(at::equal(t, at::tensor({1.5, 2.5}, at::kFloat)));
  EXPECT_TRUE(at::equal(c.all_gather(t), t));
  EXPECT_EQ(c.all_gather_values({1.0, 2.0}), (std::vector<std::vector<double>>{{1.0, 2.0}}));
  EXPECT_EQ(c.stats().calls, 0);
}

TEST(Communicator, ABarrierNamesTheRankThatDidNotCome) {
  CommunicatorOptions o = short_timeouts();
  o.timeout = std::chrono::milliseconds(1500);
  std::string message;
  try {
    run_ranks(
        2,
        [&](Communicator& c) {
          if (c.rank() == 0) c.barrier();  // rank 1 leaves without it
        },
        o);
  } catch (const CollectiveError& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("rank 0 of 2: barrier failed (a peer stopped, or did not answer within "
                         "distributed.timeout_seconds, 1.5 s)"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("Ranks 1 failed to pass monitoredBarrier"), std::string::npos) << message;
}

TEST(Communicator, AFailedCollectiveSaysWhenEachRankWasLastHeardOf) {
  CommunicatorOptions o = short_timeouts();
  o.timeout = std::chrono::milliseconds(1000);
  std::string message;
  try {
    run_ranks(
        2,
        [&](Communicator& c) {
          c.heartbeat(1);
          at::Tensor t = at::zeros({1});
          c.all_reduce_sum(t);
          if (c.rank() == 1) return;  // rank 1 is gone after step 1
          c.heartbeat(2);
          c.all_reduce_sum(t);
        },
        o);
  } catch (const CollectiveError& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("rank 0 of 2: all-reduce (sum) failed"), std::string::npos) << message;
  EXPECT_NE(message.find("; last heard of: rank 0 after step 2 ("), std::string::npos) << message;
  EXPECT_NE(message.find(", rank 1 after step 1 ("), std::string::npos) << message;
}

// The rendezvous waits distributed.init_timeout_seconds for late ranks (not the collective
// timeout) and names the ones that did not come; a stop signal ends the wait.
TEST(Communicator, TheRendezvousWaitsTheInitTimeoutAndNamesWhoIsMissing) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  CommunicatorOptions o;
  o.init_timeout = std::chrono::milliseconds(1000);
  o.timeout = std::chrono::seconds(60);
  const auto start = std::chrono::steady_clock::now();
  std::string message;
  try {
    Communicator c(store, "late/", 0, 3, "127.0.0.1", o);
  } catch (const CollectiveError& e) {
    message = e.what();
  }
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(waited, 30.0);
  EXPECT_EQ(message,
            "rank 0 of 3: ranks 1 and 2 did not come within 1 s "
            "(distributed.init_timeout_seconds)");

  o.init_timeout = std::chrono::seconds(60);
  int polls = 0;
  o.stop_requested = [&polls] { return ++polls > 2; };
  EXPECT_THROW(Communicator(store, "stopped/", 0, 2, "127.0.0.1", o), RendezvousStopped);
}

TEST(Communicator, ReduceScatterRefusesAnUnevenSplit) {
  EXPECT_THROW(run_ranks(2, [](Communicator& c) { c.reduce_scatter_sum(at::zeros({3})); }),
               std::invalid_argument);
}

}  // namespace
}  // namespace ftbench::dist
