// One rank's view of a job's process group on PyTorch's c10d: a Gloo group for CPU tensors and
// CPU-side metadata, and every collective ftbench uses, each wrapped once for what LibTorch's
// versions and Gloo do differently (DISTRIBUTED.md): Gloo on 1.13 has no AVG, no bf16, no
// all-gather into one tensor and no reduce-scatter, so AVG is SUM then a division, bf16 travels
// as fp32, all-gather is a list all-gather and a cat, reduce-scatter an all-reduce and a slice.
// Each call blocks until its result is there and counts its host time and bytes (stats()).
//
// Where LibTorch has no c10d Gloo (its headers or USE_C10D_GLOO missing: available() is false)
// a Communicator is only ever of one rank, and every collective is the identity.
//
// Not thread safe: one thread per rank calls it (tests run ranks as threads, one Communicator
// each, over one HashStore).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>
#include <c10/util/intrusive_ptr.h>
#include <torch/csrc/distributed/c10d/Store.hpp>

#include "train/dist/launch.h"
#include "util/error.h"

namespace ftbench::dist {

// A peer failed, a collective or the rendezvous timed out, or the transport broke. Exit 3.
class CollectiveError : public RunFailed {
 public:
  explicit CollectiveError(const std::string& message) : RunFailed(message) {}
};

// A stop signal arrived while this rank waited for the others to meet: exit 4.
class RendezvousStopped : public InterruptedRun {
 public:
  explicit RendezvousStopped(const std::string& message) : InterruptedRun(message) {}
};

// Whether this build has c10d's Gloo group (so can run jobs of several processes).
bool available();
// Whether this build has c10d's NCCL group (RCCL on ROCm is the same class) for GPU tensors.
bool nccl_available();

struct CommunicatorOptions {
  // How long the rendezvous (every rank's store connection and the group's first handshake) may
  // take: ranks start at different times, a slow node loads LibTorch later.
  std::chrono::milliseconds init_timeout{std::chrono::seconds(300)};
  // How long one collective may wait for its peers before the job is failed.
  std::chrono::milliseconds timeout{std::chrono::seconds(600)};
  // The rank's device. A GPU's tensors go through an NCCL group where this build has one and
  // `device_collectives` is on (distributed.backend auto or nccl), else through host memory
  // over Gloo.
  at::Device device = at::kCPU;
  bool device_collectives = true;
  // Asked about every second of the rendezvous: true ends it with RendezvousStopped.
  std::function<bool()> stop_requested;
  // Whether a failed collective's message quotes the ranks' heartbeats from this group's keys
  // (heartbeat()); false for a group nobody writes them into (a node's, for a split base).
  bool heartbeats = true;
  // How messages name this rank and its peers: "rank R of N" and "rank" when empty; a group
  // within the job says where it is ("rank 3 of 4 (local rank 1 of 2 on node 1)", "local rank").
  std::string self_name;
  std::string peer_name = "rank";
  // Appended to a failed collective's message: for a node's group, what the job's group knows of
  // every rank (Communicator::last_heard_of of the job's group).
  std::function<std::string()> more_on_failure;
};

// What the collectives of one Communicator cost so far.
struct CollectiveStats {
  int64_t calls = 0;
  double blocked_seconds = 0.0;  // host steady clock inside the collectives
  int64_t bytes = 0;             // of the tensors given to them (a rank's share, not the wire's)
};

class Communicator;

// An all-gather started by Communicator::start_all_gather, running in the background (Gloo's
// thread, NCCL's stream) until wait(). Destroying one that was not waited for waits first (its
// buffers are still being written), ignoring a failure.
class PendingGather {
 public:
  ~PendingGather();
  PendingGather(const PendingGather&) = delete;
  PendingGather& operator=(const PendingGather&) = delete;
  // Returns once the whole tensor holds every rank's shard (on NCCL: once the current stream
  // waits for it). Throws CollectiveError, as the blocking collectives do. Once only.
  void wait();

 private:
  friend class Communicator;
  struct Work;
  PendingGather(Communicator& comm, std::unique_ptr<Work> work);
  Communicator& comm_;
  std::unique_ptr<Work> work_;
};

class Communicator {
 public:
  // A group of one: every collective returns its input.
  Communicator();
  // Rank `rank` of `size` over `store` (shared by the group's ranks: a TCPStore, FileStore or,
  // in tests, one HashStore for every thread). Every key it writes is under `prefix`. Gloo's
  // device binds `interface_host` ("127.0.0.1" for one machine; GLOO_SOCKET_IFNAME wins when
  // set). Throws CollectiveError when the group cannot be formed within init_timeout.
  Communicator(const c10::intrusive_ptr<c10d::Store>& store, const std::string& prefix,
               int64_t rank, int64_t size, const std::string& interface_host,
               const CommunicatorOptions& options);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int64_t rank() const { return rank_; }
  // How messages name this rank: options.self_name, or "rank R of N".
  std::string self() const;
  // "nccl" when GPU tensors go through NCCL, else "gloo".
  const char* backend_name() const;
  int64_t size() const { return size_; }

  // In place (any floating or integer dtype). On Gloo, bf16 and fp16 travel as fp32 and a GPU
  // tensor through host memory; on NCCL a GPU tensor stays where it is, and the call returns
  // once the collective is queued on the current stream (the step's synchronisation waits for
  // it). Sum and average are of every rank's tensor.
  void all_reduce_sum(at::Tensor& tensor);
  void all_reduce_avg(at::Tensor& tensor);
  void all_reduce_max(at::Tensor& tensor);
  // Every rank ends with `root`'s tensor (same shape and dtype on every rank).
  void broadcast(at::Tensor& tensor, int64_t root);
  // The ranks' tensors (same shape on every rank) concatenated along dim 0, in rank order.
  at::Tensor all_gather(const at::Tensor& tensor);
  // This rank's slice (dim 0, size() equal parts; dim 0 must divide) of the sum of every rank's
  // tensor.
  at::Tensor reduce_scatter_sum(const at::Tensor& tensor);
  // Starts gathering every rank's `shard` (contiguous; the same numel, dtype and device on every
  // rank) into `whole` (contiguous, size() x shard's numel elements, the same dtype and device),
  // in rank order, and returns without waiting. The bits are copied, never converted: bf16 stays
  // bf16, also on LibTorch 1.13's Gloo, which has no bf16. Not counted in stats(): the caller
  // counts what it waits for. Both tensors must live until the gather is waited for.
  std::unique_ptr<PendingGather> start_all_gather(const at::Tensor& whole, const at::Tensor& shard);
  // Every rank's values, rank by rank: metadata (step times, counters) for the report.
  std::vector<std::vector<double>> all_gather_values(const std::vector<double>& values);
  // Returns once every rank has called it; CollectiveError after `timeout` naming the ranks that
  // did not arrive (Gloo's monitored barrier).
  void barrier();

  const CollectiveStats& stats() const { return stats_; }

  // Says in the store that this rank finished optimizer step `step` (one small write), so that
  // when a collective fails the others can name the rank that fell behind.
  void heartbeat(int64_t step);
  // "; last heard of: rank 1 after step 3 (12.5 s ago), rank 0 after step 4": from the ranks'
  // heartbeats, read with a short timeout; "" where the store cannot be read either, or the
  // group keeps none.
  std::string last_heard_of();

 private:
  friend class PendingGather;
  struct Group;
  [[noreturn]] void fail(const char* what, const std::exception& e);
  // Sum (or max) in place over the ranks, divided by `divide_by` (> 1: an average); `what`
  // names it in errors.
  void all_reduce(at::Tensor& tensor, bool max, int64_t divide_by, const char* what);
  // Every rank's arrival in the store, waited for up to init_timeout.
  void meet(const c10::intrusive_ptr<c10d::Store>& store);
  void count(const at::Tensor& tensor, std::chrono::steady_clock::time_point start);

  int64_t rank_ = 0;
  int64_t size_ = 1;
  CommunicatorOptions options_;
  std::unique_ptr<Group> group_;
  c10::intrusive_ptr<c10d::Store> store_;  // the group's own keys (prefix applied)
  CollectiveStats stats_;
};

// The store a launched job meets at: a TCPStore at launch.master_addr:master_port, served by
// rank 0 (a client everywhere under torchrun's agent store), waiting `timeout` for the others.
// The whole connection, a first round trip through the store included, ends within `timeout`
// (and a few seconds): a port that accepts and never answers as a c10d store is a
// CollectiveError then, not a wait for good. `stop_requested`, asked every 50 ms while it waits,
// ends it with RendezvousStopped (exit code 4).
c10::intrusive_ptr<c10d::Store> connect_store(const Launch& launch,
                                              std::chrono::milliseconds timeout,
                                              const std::function<bool()>& stop_requested = {});

// The Communicator of a launched job: its store, its key prefix, rank and size; a group of one
// for a single process.
std::unique_ptr<Communicator> communicator_for(const Launch& launch,
                                               const CommunicatorOptions& options);

// The Communicator of the ranks on this rank's node (local rank of local world size), for what
// is split within a node; its keys under the job's prefix and "node<node rank>/", its messages
// naming the rank in the job and on the node. Every rank of the job calls it (after
// communicator_for, whose store rank 0 serves). A group of one where the node has one rank.
std::unique_ptr<Communicator> node_communicator_for(const Launch& launch,
                                                    const CommunicatorOptions& options);

}  // namespace ftbench::dist
