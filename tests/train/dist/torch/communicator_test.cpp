// Every collective of dist::Communicator with exact values, for 2 and 4 ranks run as threads of
// this process over one c10d HashStore (Gloo on 127.0.0.1). Values are small integers or dyadic
// fractions, so sums are exact in any order.
#include "train/dist/torch/communicator.h"

#include <atomic>
#include <cmath>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/csrc/distributed/c10d/HashStore.hpp>

#include "thread_ranks.h"

namespace ftbench::dist {
namespace {

using testing::RankChecks;
using testing::run_ranks;
using testing::short_timeouts;

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

// Two gathers in flight at once, waited for in order; bf16 keeps its bits (on 1.13's Gloo it
// travels as fp16 of the same bits, so a value fp16 cannot hold arrives unchanged).
TEST_P(Collectives, StartedAllGathersFillTheWholeInRankOrderBitForBit) {
  const int64_t n = GetParam();
  RankChecks checks;
  run_ranks(n, [&](Communicator& c) {
    const double r = double(c.rank());
    const at::Tensor shard = at::tensor({r, r + 0.5, -r}, at::kFloat);
    at::Tensor whole = at::full({3 * n}, -7.0, at::kFloat);
    // 1e30 and 2^-130 are far outside fp16's range: converted, they would not survive.
    const at::Tensor bf_shard =
        at::tensor({1e30 * (r + 1), std::ldexp(1.0, -130)}, at::kFloat).to(at::kBFloat16);
    at::Tensor bf_whole = at::zeros({2 * n}, at::kBFloat16);
    std::unique_ptr<PendingGather> first = c.start_all_gather(whole, shard);
    std::unique_ptr<PendingGather> second = c.start_all_gather(bf_whole, bf_shard);
    first->wait();
    second->wait();
    std::vector<double> want;
    std::vector<double> bf_want;
    for (int64_t k = 0; k < n; ++k) {
      want.insert(want.end(), {double(k), double(k) + 0.5, -double(k)});
      bf_want.insert(bf_want.end(), {1e30 * double(k + 1), std::ldexp(1.0, -130)});
    }
    checks.expect_equal(whole, at::tensor(want, at::kFloat), c.rank());
    checks.expect_equal(bf_whole, at::tensor(bf_want, at::kFloat).to(at::kBFloat16), c.rank());
    // Not counted in the Communicator's own figures: the caller counts what it waits for.
    checks.expect_equal(at::tensor({c.stats().calls}), at::tensor({int64_t(0)}), c.rank());
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
          // The group formed on every rank first: a rank 1 that left at once could end its side
          // while rank 0 still connected, and rank 0 then failed to form the group instead.
          at::Tensor t = at::zeros({1});
          c.all_reduce_sum(t);
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

TEST(Communicator, StartAllGatherRefusesAWholeOfTheWrongSize) {
  EXPECT_THROW(
      run_ranks(2, [](Communicator& c) { c.start_all_gather(at::zeros({5}), at::zeros({2})); }),
      std::invalid_argument);
  Communicator one;
  at::Tensor whole = at::zeros({2});
  one.start_all_gather(whole, at::tensor({1.0, 2.0}, at::kFloat))->wait();
  EXPECT_TRUE(at::equal(whole, at::tensor({1.0, 2.0}, at::kFloat)));
}

// Two processes given the same place: the second is told so at once (exit 2), the first waits
// for the rank nobody took and names it.
TEST(Communicator, TwoProcessesGivenOneRankAreRefused) {
  auto store = c10::make_intrusive<c10d::HashStore>();
  CommunicatorOptions o = short_timeouts();
  o.init_timeout = std::chrono::milliseconds(1500);
  std::vector<std::string> messages(2);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&, t] {
      if (t == 1) std::this_thread::sleep_for(std::chrono::milliseconds(200));
      try {
        Communicator c(store, "twice/", 0, 2, "127.0.0.1", o);
      } catch (const std::exception& e) {
        messages[static_cast<std::size_t>(t)] =
            (dynamic_cast<const LaunchError*>(&e) != nullptr ? "launch: " : "other: ") +
            std::string(e.what());
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(messages[1],
            "launch: rank 0 of 2: another process has joined as rank 0 of this group too: two "
            "processes were given the same place in the job (RANK, LOCAL_RANK, GROUP_RANK or "
            "Slurm's SLURM_PROCID, SLURM_LOCALID, SLURM_NODEID)");
  EXPECT_EQ(messages[0],
            "other: rank 0 of 2: rank 1 did not come within 1.5 s "
            "(distributed.init_timeout_seconds)");
}

// A group within the job (a node's) names the rank in the job and on the node, its peers by
// their local rank, and adds what the job's group knows.
TEST(Communicator, AGroupWithinTheJobSaysWhereItIs) {
  CommunicatorOptions o = short_timeouts();
  o.init_timeout = std::chrono::milliseconds(1500);
  o.timeout = std::chrono::milliseconds(1000);
  o.heartbeats = false;
  o.self_name = "rank 3 of 4 (local rank 1 of 2 on node 1)";
  o.peer_name = "local rank";
  o.more_on_failure = [] { return std::string("; the job's group: rank 2 after step 3"); };
  auto store = c10::make_intrusive<c10d::HashStore>();
  std::string late;
  try {
    Communicator c(store, "node1/", 1, 2, "127.0.0.1", o);
  } catch (const CollectiveError& e) {
    late = e.what();
  }
  EXPECT_EQ(late,
            "rank 3 of 4 (local rank 1 of 2 on node 1): local rank 0 did not come within 1.5 s "
            "(distributed.init_timeout_seconds)");
  std::string failed;
  try {
    run_ranks(
        2,
        [&](Communicator& c) {
          if (c.rank() == 0) return;  // gone
          at::Tensor t = at::zeros({1});
          c.all_reduce_sum(t);
        },
        o);
  } catch (const CollectiveError& e) {
    failed = e.what();
  }
  EXPECT_EQ(failed.rfind("rank 3 of 4 (local rank 1 of 2 on node 1): all-reduce (sum) failed", 0),
            0u)
      << failed;
  EXPECT_NE(failed.find("; the job's group: rank 2 after step 3"), std::string::npos) << failed;
  EXPECT_EQ(failed.find("last heard of"), std::string::npos) << failed;
}

TEST(Communicator, ReduceScatterRefusesAnUnevenSplit) {
  EXPECT_THROW(run_ranks(2, [](Communicator& c) { c.reduce_scatter_sum(at::zeros({3})); }),
               std::invalid_argument);
}

}  // namespace
}  // namespace ftbench::dist
