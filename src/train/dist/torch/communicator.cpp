#include "train/dist/torch/communicator.h"

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/utils.h>
#include <torch/version.h>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#if FTBENCH_HAVE_C10D_GLOO
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#endif
#if FTBENCH_HAVE_C10D_NCCL
#include <c10/cuda/CUDAGuard.h>
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#ifndef FTBENCH_HAVE_C10D_GLOO
#define FTBENCH_HAVE_C10D_GLOO 0
#endif
#ifndef FTBENCH_HAVE_C10D_NCCL
#define FTBENCH_HAVE_C10D_NCCL 0
#endif

namespace ftbench::dist {
namespace {

using Clock = std::chrono::steady_clock;

std::string first_line(const std::exception& e) {
  const auto* c10_error = dynamic_cast<const c10::Error*>(&e);
  const std::string message = c10_error != nullptr ? c10_error->what_without_backtrace() : e.what();
  return message.substr(0, message.find('\n'));
}

double seconds(std::chrono::milliseconds ms) { return double(ms.count()) / 1000.0; }

bool is_loopback(const std::string& host) {
  return host == "localhost" || host.rfind("127.", 0) == 0 || host == "::1";
}

// Gloo reduces and moves fp32, fp64 and integers on every LibTorch; bf16 and fp16 go as fp32.
bool needs_fp32(const at::Tensor& t) {
  return t.scalar_type() == at::kBFloat16 || t.scalar_type() == at::kHalf;
}

}  // namespace

struct Communicator::Group {
#if FTBENCH_HAVE_C10D_GLOO
  c10::intrusive_ptr<c10d::ProcessGroupGloo> gloo;
#endif
#if FTBENCH_HAVE_C10D_NCCL
  c10::intrusive_ptr<c10d::ProcessGroupNCCL> nccl;
#endif
};

bool available() { return FTBENCH_HAVE_C10D_GLOO != 0; }

bool nccl_available() { return FTBENCH_HAVE_C10D_NCCL != 0; }

const char* Communicator::backend_name() const {
#if FTBENCH_HAVE_C10D_NCCL
  if (group_ && group_->nccl) return "nccl";
#endif
  return "gloo";
}

Communicator::Communicator() = default;

#if FTBENCH_HAVE_C10D_NCCL
namespace {
// LibTorch 2.x ends an NCCL group's communicators with shutdown() (else they are left to the
// process's exit, which NCCL warns about); older ones have none.
template <class Group>
auto shut_down(Group& g, int) -> decltype(g.shutdown(), void()) {
  g.shutdown();
}
template <class Group>
void shut_down(Group&, long) {}
}  // namespace
#endif

Communicator::~Communicator() {
#if FTBENCH_HAVE_C10D_NCCL
  if (group_ && group_->nccl) {
    try {
      shut_down(*group_->nccl, 0);
    } catch (const std::exception&) {
      // A peer gone already: nothing left to end cleanly.
    }
  }
#endif
}

Communicator::Communicator(const c10::intrusive_ptr<c10d::Store>& store, const std::string& prefix,
                           int64_t rank, int64_t size, const std::string& interface_host,
                           const CommunicatorOptions& options)
    : rank_(rank), size_(size), options_(options) {
  if (size_ == 1) return;
#if FTBENCH_HAVE_C10D_GLOO
  const auto started = std::chrono::steady_clock::now();
  try {
    // Gloo applies its group's timeout to every operation (not the per-call one) and to
    // connecting the full mesh; a late rank is waited for by the store (init_timeout).
    auto gloo_options = c10d::ProcessGroupGloo::Options::create(options_.timeout);
    const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
    if (ifname != nullptr && *ifname != '\0') {
      const std::string first(ifname, std::strcspn(ifname, ","));
      gloo_options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForInterface(first));
    } else if (is_loopback(interface_host)) {
      gloo_options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    } else {
      gloo_options->devices.push_back(c10d::ProcessGroupGloo::createDefaultDevice());
    }
    gloo_options->threads = 1;
    store_ = c10::make_intrusive<c10d::PrefixStore>(prefix, store);
    meet(store_);
    auto group_store = c10::make_intrusive<c10d::PrefixStore>(prefix + "gloo", store);
    group_ = std::make_unique<Group>();
    group_->gloo = c10::make_intrusive<c10d::ProcessGroupGloo>(
        group_store, static_cast<int>(rank_), static_cast<int>(size_), gloo_options);
#if FTBENCH_HAVE_C10D_NCCL
    if (options_.device.is_cuda() && options_.device_collectives) {
      // The rank's GPU first: NCCL binds a communicator to the current device.
      const c10::cuda::CUDAGuard guard(options_.device);
      auto nccl_options = c10d::ProcessGroupNCCL::Options::create();
      nccl_options->timeout = options_.timeout;
      auto nccl_store = c10::make_intrusive<c10d::PrefixStore>(prefix + "nccl", store);
      group_->nccl = c10::make_intrusive<c10d::ProcessGroupNCCL>(
          nccl_store, static_cast<int>(rank_), static_cast<int>(size_), nccl_options);
      // Communicators are created by the first collective: here, outside every timing.
      std::vector<at::Tensor> warm{at::zeros({1}, at::TensorOptions().device(options_.device))};
      group_->nccl->allreduce(warm)->wait();
      (void)warm[0].item<float>();
    }
#endif
  } catch (const CollectiveError&) {
    throw;
  } catch (const RendezvousStopped&) {
    throw;
  } catch (const LaunchError&) {
    throw;
  } catch (const std::exception& e) {
    // Every rank had arrived: the handshake itself failed, at its timeout or before it.
    const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
        std::chrono::steady_clock::now() - started);
    const std::string when =
        waited + std::chrono::seconds(1) >= options_.timeout
            ? fmt::format("did not form within {} s (distributed.timeout_seconds)",
                          seconds(options_.timeout))
            : fmt::format("failed to form after {:.1f} s", seconds(waited));
    throw CollectiveError(fmt::format("{}: the process group {}, though every rank had arrived: {}",
                                      self(), when, first_line(e)));
  }
#else
  (void)store;
  (void)prefix;
  (void)interface_host;
  throw CollectiveError(
      fmt::format("this ftbench was built without c10d's Gloo group (LibTorch's "
                  "torch/csrc/distributed/c10d/ProcessGroupGloo.hpp and the gloo headers, Debian's "
                  "libgloo-dev), so it runs one process only, not rank {} of {}",
                  rank, size));
#endif
}

void Communicator::count(const at::Tensor& tensor, Clock::time_point start) {
  ++stats_.calls;
  stats_.bytes +=
      static_cast<int64_t>(tensor.numel()) * static_cast<int64_t>(tensor.element_size());
  stats_.blocked_seconds += std::chrono::duration<double>(Clock::now() - start).count();
}

#if FTBENCH_HAVE_C10D_GLOO
namespace {

// Waits for `work`; a failure or a timeout is rethrown for Communicator::fail.
void finish(const c10::intrusive_ptr<c10d::Work>& work) { work->wait(); }

}  // namespace
#endif

namespace {
// `run` on a contiguous host tensor holding `tensor`'s values, bf16/fp16 as fp32 (what Gloo
// moves on every LibTorch), then the result back into `tensor`.
template <typename Run>
void through_fp32(at::Tensor& tensor, Run run) {
  if (!needs_fp32(tensor) && tensor.device().is_cpu()) {
    at::Tensor t = tensor.is_contiguous() ? tensor : tensor.contiguous();
    run(t);
    if (!t.is_same(tensor)) tensor.copy_(t);
    return;
  }
  at::Tensor wide =
      tensor.to(at::kCPU, needs_fp32(tensor) ? at::kFloat : tensor.scalar_type()).contiguous();
  run(wide);
  tensor.copy_(wide);
}
}  // namespace

#if FTBENCH_HAVE_C10D_NCCL
namespace {
// In place on the GPU through NCCL; `divide_by` > 1 makes the sum an average.
void nccl_all_reduce(c10d::ProcessGroupNCCL& nccl, at::Tensor& tensor, c10d::ReduceOp op,
                     std::chrono::milliseconds timeout, int64_t divide_by) {
  at::Tensor t = tensor.is_contiguous() ? tensor : tensor.contiguous();
  std::vector<at::Tensor> tensors{t};
  c10d::AllreduceOptions opts;
  opts.reduceOp = op;
  opts.timeout = timeout;
  nccl.allreduce(tensors, opts)->wait();  // the current stream waits; the host does not
  if (divide_by > 1) t.div_(double(divide_by));
  if (!t.is_same(tensor)) tensor.copy_(t);
}
}  // namespace
#endif

#if FTBENCH_HAVE_C10D_GLOO
namespace {
// In place through Gloo, bf16/fp16 as fp32; `divide_by` > 1 makes the sum an average.
void gloo_all_reduce(c10d::ProcessGroupGloo& gloo, at::Tensor& tensor, c10d::ReduceOp op,
                     std::chrono::milliseconds timeout, int64_t divide_by) {
  through_fp32(tensor, [&](at::Tensor& t) {
    std::vector<at::Tensor> tensors{t};
    c10d::AllreduceOptions opts;
    opts.reduceOp = op;
    opts.timeout = timeout;
    finish(gloo.allreduce(tensors, opts));
    if (divide_by > 1) t.div_(double(divide_by));
  });
}
}  // namespace
#endif

void Communicator::all_reduce(at::Tensor& tensor, bool max, int64_t divide_by, const char* what) {
  if (size_ == 1) return;
  const Clock::time_point start = Clock::now();
#if FTBENCH_HAVE_C10D_GLOO
  const c10d::ReduceOp op = max ? c10d::ReduceOp::MAX : c10d::ReduceOp::SUM;
  try {
#if FTBENCH_HAVE_C10D_NCCL
    if (tensor.is_cuda() && group_->nccl) {
      nccl_all_reduce(*group_->nccl, tensor, op, options_.timeout, divide_by);
    } else {
      gloo_all_reduce(*group_->gloo, tensor, op, options_.timeout, divide_by);
    }
#else
    gloo_all_reduce(*group_->gloo, tensor, op, options_.timeout, divide_by);
#endif
  } catch (const std::exception& e) {
    fail(what, e);
  }
#else
  (void)max;
  (void)divide_by;
  (void)what;
#endif
  count(tensor, start);
}

void Communicator::all_reduce_sum(at::Tensor& tensor) {
  all_reduce(tensor, false, 1, "all-reduce (sum)");
}

void Communicator::all_reduce_max(at::Tensor& tensor) {
  all_reduce(tensor, true, 1, "all-reduce (max)");
}

void Communicator::all_reduce_avg(at::Tensor& tensor) {
  if (!at::isFloatingType(tensor.scalar_type())) {
    throw std::invalid_argument("all_reduce_avg: a floating-point tensor is needed");
  }
  // Gloo on LibTorch 1.13 has no ReduceOp::AVG: the sum, divided (in fp32 for bf16).
  all_reduce(tensor, false, size_, "all-reduce (average)");
}

void Communicator::broadcast(at::Tensor& tensor, int64_t root) {
  if (root < 0 || root >= size_) {
    throw std::invalid_argument(fmt::format("broadcast: root {} of {} ranks", root, size_));
  }
  if (size_ == 1) return;
  const Clock::time_point start = Clock::now();
#if FTBENCH_HAVE_C10D_NCCL
  if (tensor.is_cuda() && group_->nccl && tensor.is_contiguous()) {
    std::vector<at::Tensor> tensors{tensor};
    c10d::BroadcastOptions opts;
    opts.rootRank = root;
    opts.timeout = options_.timeout;
    try {
      group_->nccl->broadcast(tensors, opts)->wait();
    } catch (const std::exception& e) {
      fail("broadcast", e);
    }
    count(tensor, start);
    return;
  }
#endif
#if FTBENCH_HAVE_C10D_GLOO
  through_fp32(tensor, [&](at::Tensor& t) {
    std::vector<at::Tensor> tensors{t};
    c10d::BroadcastOptions opts;
    opts.rootRank = root;
    opts.timeout = options_.timeout;
    try {
      finish(group_->gloo->broadcast(tensors, opts));
    } catch (const std::exception& e) {
      fail("broadcast", e);
    }
  });
#endif
  count(tensor, start);
}

at::Tensor Communicator::all_gather(const at::Tensor& tensor) {
  if (size_ == 1) return tensor.clone();
  const Clock::time_point start = Clock::now();
  at::Tensor out;
#if FTBENCH_HAVE_C10D_GLOO
  // Gloo on 1.13 has no all-gather into one tensor: a list all-gather, then a cat (on the
  // host; the result goes back to the tensor's device).
  at::Tensor input =
      tensor.to(at::kCPU, needs_fp32(tensor) ? at::kFloat : tensor.scalar_type()).contiguous();
  std::vector<at::Tensor> inputs{input};
  std::vector<std::vector<at::Tensor>> outputs(1);
  for (int64_t r = 0; r < size_; ++r) outputs[0].push_back(at::empty_like(input));
  c10d::AllgatherOptions opts;
  opts.timeout = options_.timeout;
  try {
    finish(group_->gloo->allgather(outputs, inputs, opts));
  } catch (const std::exception& e) {
    fail("all-gather", e);
  }
  out = at::cat(outputs[0], 0).to(tensor.device(), tensor.scalar_type());
#endif
  count(tensor, start);
  return out;
}

at::Tensor Communicator::reduce_scatter_sum(const at::Tensor& tensor) {
  if (tensor.dim() == 0 || tensor.size(0) % size_ != 0) {
    throw std::invalid_argument(
        fmt::format("reduce_scatter_sum: dim 0 of {} does not split into {} equal parts",
                    tensor.dim() == 0 ? 0 : tensor.size(0), size_));
  }
  // Gloo has no reduce-scatter on 1.13: the whole sum, of which this rank keeps its slice.
  at::Tensor sum = tensor.clone();
  all_reduce_sum(sum);
  const int64_t part = tensor.size(0) / size_;
  return sum.narrow(0, rank_ * part, part).clone();
}

struct PendingGather::Work {
#if FTBENCH_HAVE_C10D_GLOO
  c10::intrusive_ptr<c10d::Work> work;
#endif
  at::Tensor whole;   // where the gathered bits go
  at::Tensor staged;  // the gathered bits on the host, when `whole` is on a GPU and goes by Gloo
  // The tensors given to the collective, alive until it is done.
  std::vector<at::Tensor> inputs;
  std::vector<std::vector<at::Tensor>> outputs;
  bool waited = false;

  // Blocks until the collective is done; rethrows its failure.
  void finish() {
    waited = true;
#if FTBENCH_HAVE_C10D_GLOO
    if (work) work->wait();
#endif
  }
};

namespace {
// Gloo moves only the dtypes it knows (1.13: no bf16); an all-gather copies bits, so bf16 goes
// as fp16 of the same bits.
at::Tensor as_gloo_bits(const at::Tensor& t) {
  return t.scalar_type() == at::kBFloat16 ? t.view(at::kHalf) : t;
}
}  // namespace

PendingGather::PendingGather(Communicator& comm, std::unique_ptr<Work> work)
    : comm_(comm), work_(std::move(work)) {}

PendingGather::~PendingGather() {
  if (work_->waited) return;
  try {
    work_->finish();
  } catch (const std::exception&) {
    // Waited for only so that the buffers outlive the transfer; the failure was or will be
    // reported by whoever stopped waiting for it.
  }
}

void PendingGather::wait() {
  if (work_->waited) return;
  try {
    work_->finish();
  } catch (const std::exception& e) {
    comm_.fail("all-gather", e);
  }
  if (work_->staged.defined()) {
    torch::NoGradGuard no_grad;
    as_gloo_bits(work_->whole).view(-1).copy_(work_->staged);
  }
  work_->inputs.clear();
  work_->outputs.clear();
  work_->staged = at::Tensor();
}

std::unique_ptr<PendingGather> Communicator::start_all_gather(const at::Tensor& whole,
                                                              const at::Tensor& shard) {
  if (!whole.is_contiguous() || !shard.is_contiguous() || whole.numel() != shard.numel() * size_ ||
      whole.scalar_type() != shard.scalar_type() || whole.device() != shard.device()) {
    throw std::invalid_argument(fmt::format(
        "start_all_gather: a whole of {} elements ({}) for shards of {} ({}) over {} ranks",
        whole.numel(), whole.toString(), shard.numel(), shard.toString(), size_));
  }
  auto work = std::make_unique<PendingGather::Work>();
  work->whole = whole;
  if (size_ == 1) {
    torch::NoGradGuard no_grad;
    at::Tensor(whole).view(-1).copy_(shard.view(-1));
    work->waited = true;
    return std::unique_ptr<PendingGather>(new PendingGather(*this, std::move(work)));
  }
#if FTBENCH_HAVE_C10D_GLOO
  c10d::AllgatherOptions opts;
  opts.timeout = options_.timeout;
  try {
#if FTBENCH_HAVE_C10D_NCCL
    if (whole.is_cuda() && group_->nccl) {
      at::Tensor out = whole;
      at::Tensor in = shard;
      work->inputs = {in, out};
      work->work = group_->nccl->_allgather_base(out, in, opts);
      return std::unique_ptr<PendingGather>(new PendingGather(*this, std::move(work)));
    }
#endif
    at::Tensor in = as_gloo_bits(shard).view(-1);
    at::Tensor out = as_gloo_bits(whole).view(-1);
    if (!whole.device().is_cpu()) {
      in = in.to(at::kCPU);
      work->staged = at::empty({whole.numel()}, in.options());
      out = work->staged;
    }
    const int64_t n = shard.numel();
    work->inputs = {in};
    work->outputs.resize(1);
    for (int64_t r = 0; r < size_; ++r) work->outputs[0].push_back(out.narrow(0, r * n, n));
    work->work = group_->gloo->allgather(work->outputs, work->inputs, opts);
  } catch (const std::exception& e) {
    fail("all-gather", e);
  }
#endif
  return std::unique_ptr<PendingGather>(new PendingGather(*this, std::move(work)));
}

std::vector<std::vector<double>> Communicator::all_gather_values(
    const std::vector<double>& values) {
  if (size_ == 1) return {values};
  // Lengths first, so that ranks may give different numbers of values.
  at::Tensor length = at::full({1}, static_cast<int64_t>(values.size()), at::kLong);
  const at::Tensor lengths = all_gather(length);
  const int64_t longest = lengths.max().item<int64_t>();
  at::Tensor padded = at::zeros({longest}, at::kDouble);
  std::copy(values.begin(), values.end(), padded.data_ptr<double>());
  const at::Tensor all = all_gather(padded.unsqueeze(0)).contiguous();
  std::vector<std::vector<double>> out(static_cast<std::size_t>(size_));
  for (int64_t r = 0; r < size_; ++r) {
    const double* row = all[r].data_ptr<double>();
    out[static_cast<std::size_t>(r)].assign(row, row + lengths[r].item<int64_t>());
  }
  return out;
}

void Communicator::barrier() {
  if (size_ == 1) return;
  const Clock::time_point start = Clock::now();
#if FTBENCH_HAVE_C10D_GLOO
  c10d::BarrierOptions opts;
  opts.timeout = options_.timeout;
  try {
    // Rank 0 waits for each peer and names those that did not come.
    group_->gloo->monitoredBarrier(opts, /*waitAllRanks=*/true);
  } catch (const std::exception& e) {
    fail("barrier", e);
  }
#endif
  ++stats_.calls;
  stats_.blocked_seconds += std::chrono::duration<double>(Clock::now() - start).count();
}

void Communicator::meet(const c10::intrusive_ptr<c10d::Store>& store) {
  const auto key = [](int64_t r) { return fmt::format("arrived/{}", r); };
  // Counted, not set: a second process given the same place is told so at once, rather than
  // both taken for one and the group failing later for want of a rank nobody named.
  if (store->add(key(rank_), 1) > 1) {
    throw LaunchError(fmt::format(
        "{}: another process has joined as {} {} of this group too: two processes were given "
        "the same place in the job (RANK, LOCAL_RANK, GROUP_RANK or Slurm's SLURM_PROCID, "
        "SLURM_LOCALID, SLURM_NODEID)",
        self(), options_.peer_name, rank_));
  }
  std::vector<std::string> keys;
  for (int64_t r = 0; r < size_; ++r) keys.push_back(key(r));
  const Clock::time_point deadline = Clock::now() + options_.init_timeout;
  for (;;) {
    if (store->check(keys)) return;
    if (options_.stop_requested && options_.stop_requested()) {
      throw RendezvousStopped(
          fmt::format("stopped by a signal while {} waited for the others to meet", self()));
    }
    if (Clock::now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::vector<std::string> missing;
  for (int64_t r = 0; r < size_; ++r) {
    if (!store->check({key(r)})) missing.push_back(std::to_string(r));
  }
  std::string who;
  for (std::size_t i = 0; i < missing.size(); ++i) {
    who += (i == 0 ? "" : i + 1 == missing.size() ? " and " : ", ") + missing[i];
  }
  throw CollectiveError(
      fmt::format("{}: {}{} {} did not come within {} s "
                  "(distributed.init_timeout_seconds)",
                  self(), options_.peer_name, missing.size() == 1 ? "" : "s", who,
                  seconds(options_.init_timeout)));
}

void Communicator::fail(const char* what, const std::exception& e) {
  throw CollectiveError(
      fmt::format("{}: {} failed (a peer stopped, or did not answer within "
                  "distributed.timeout_seconds, {} s): {}{}{}",
                  self(), what, seconds(options_.timeout), first_line(e), last_heard_of(),
                  options_.more_on_failure ? options_.more_on_failure() : std::string()));
}

std::string Communicator::self() const {
  return options_.self_name.empty() ? fmt::format("rank {} of {}", rank_, size_)
                                    : options_.self_name;
}

void Communicator::heartbeat(int64_t step) {
  if (size_ == 1 || !store_) return;
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const std::string value = fmt::format("{} {:.3f}", step, now);
  store_->set(fmt::format("heartbeat/{}", rank_), std::vector<uint8_t>(value.begin(), value.end()));
}

std::string Communicator::last_heard_of() {
  if (size_ == 1 || !store_ || !options_.heartbeats) return "";
  try {
    store_->setTimeout(std::chrono::seconds(2));
    const double now =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    std::vector<std::string> parts;
    for (int64_t r = 0; r < size_; ++r) {
      const std::string key = fmt::format("heartbeat/{}", r);
      if (!store_->check({key})) {
        parts.push_back(fmt::format("rank {} before its first step", r));
        continue;
      }
      const std::vector<uint8_t> raw = store_->get(key);
      const std::string text(raw.begin(), raw.end());
      long long step = 0;
      double when = 0.0;
      if (std::sscanf(text.c_str(), "%lld %lf", &step, &when) == 2) {
        parts.push_back(fmt::format("rank {} after step {} ({:.1f} s ago)", r, step, now - when));
      }
    }
    std::string out = "; last heard of:";
    for (std::size_t i = 0; i < parts.size(); ++i) out += (i == 0 ? " " : ", ") + parts[i];
    return out;
  } catch (const std::exception&) {
    return "; the job's store does not answer either (rank 0, which serves it, may be gone)";
  }
}

namespace {

// LibTorch 2.4 on serves and connects TCPStores through libuv by default (TCPStoreOptions
// ::useLibUV), and throws where it was built without it (Debian's 2.6): the classic socket
// backend then, which every version has.
template <class Options>
auto without_libuv(Options& o, int) -> decltype(o.useLibUV = false, bool()) {
  o.useLibUV = false;
  return true;
}
template <class Options>
bool without_libuv(Options&, long) {
  return false;
}

}  // namespace

namespace {

c10::intrusive_ptr<c10d::Store> connect_tcp_store(const Launch& launch,
                                                  std::chrono::milliseconds timeout) {
  c10d::TCPStoreOptions opts;
  opts.port = static_cast<std::uint16_t>(launch.master_port);
  opts.isServer = launch.rank == 0 && !launch.agent_store;
  opts.numWorkers = static_cast<std::size_t>(launch.world_size);
  opts.waitWorkers = false;
  opts.timeout = timeout;
  try {
    try {
      return c10::make_intrusive<c10d::TCPStore>(launch.master_addr, opts);
    } catch (const std::exception& e) {
      if (std::string(e.what()).find("libuv") == std::string::npos || !without_libuv(opts, 0)) {
        throw;
      }
      return c10::make_intrusive<c10d::TCPStore>(launch.master_addr, opts);
    }
  } catch (const std::exception& e) {
    throw CollectiveError(fmt::format(
        "{}: {} the job's store at {}:{} within {} s (distributed.init_timeout_seconds): {}",
        describe(launch), opts.isServer ? "cannot serve" : "cannot reach", launch.master_addr,
        launch.master_port, seconds(timeout), first_line(e)));
  }
}

// What a connection on its own thread leaves for the waiting one.
struct PendingStore {
  std::mutex mutex;
  std::condition_variable done;
  bool finished = false;
  c10::intrusive_ptr<c10d::Store> store;
  std::exception_ptr error;
};

}  // namespace

c10::intrusive_ptr<c10d::Store> connect_store(const Launch& launch,
                                              std::chrono::milliseconds timeout,
                                              const std::function<bool()>& stop_requested) {
  // TCPStore's timeout does not bound every wait of its connection: a port that accepts and
  // then answers nothing a store would (another service, a half-dead peer) held a rank for good,
  // deaf to SIGTERM. The connection and a first round trip run on a thread of their own, which
  // is left behind (blocked in a read) when the wait ends without them.
  auto pending = std::make_shared<PendingStore>();
  std::thread([pending, launch, timeout] {
    c10::intrusive_ptr<c10d::Store> store;
    std::exception_ptr error;
    try {
      store = connect_tcp_store(launch, timeout);
      try {
        (void)store->check({"ftbench/connected"});  // an answer, in the store's protocol
      } catch (const std::exception& e) {
        throw CollectiveError(fmt::format(
            "{}: the job's store at {}:{} does not answer as a c10d store (another service on "
            "MASTER_PORT?): {}",
            describe(launch), launch.master_addr, launch.master_port, first_line(e)));
      }
    } catch (...) {
      error = std::current_exception();
    }
    const std::lock_guard<std::mutex> lock(pending->mutex);
    pending->store = std::move(store);
    pending->error = error;
    pending->finished = true;
    pending->done.notify_all();
  }).detach();
  // TCPStore's own timeout errors come first (their message says more); this bound is for what
  // it does not cover.
  const auto deadline = std::chrono::steady_clock::now() + timeout + std::chrono::seconds(5);
  std::unique_lock<std::mutex> lock(pending->mutex);
  while (!pending->finished) {
    if (stop_requested && stop_requested()) {
      throw RendezvousStopped(
          fmt::format("stopped by a signal while {} connected to the job's "
                      "store at {}:{}",
                      describe(launch), launch.master_addr, launch.master_port));
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      throw CollectiveError(fmt::format(
          "{}: the job's store at {}:{} did not answer as a c10d store within {} s "
          "(distributed.init_timeout_seconds): another service on MASTER_PORT, or a peer that "
          "hangs?",
          describe(launch), launch.master_addr, launch.master_port, seconds(timeout)));
    }
    pending->done.wait_for(lock, std::chrono::milliseconds(50));
  }
  if (pending->error) std::rethrow_exception(pending->error);
  return pending->store;
}

std::unique_ptr<Communicator> communicator_for(const Launch& launch,
                                               const CommunicatorOptions& options) {
  if (!launch.distributed()) return std::make_unique<Communicator>();
  try {
    return std::make_unique<Communicator>(
        connect_store(launch, options.init_timeout, options.stop_requested), launch.store_prefix(),
        launch.rank, launch.world_size, launch.master_addr, options);
  } catch (const CollectiveError& e) {
    if (!launch.agent_store) throw;
    // The store is torchrun's, served by the PyTorch torchrun came with: its protocol is that
    // version's. LibTorch 1.13's client cannot talk to a 2.x torchrun's store (its libuv server
    // drops the connection, "Invalid string size"), the likeliest cause of a group that fails
    // under torchrun while every rank arrived.
    throw CollectiveError(fmt::format(
        "{}; torchrun's agent serves this job's store, in the store protocol of the PyTorch "
        "torchrun belongs to: use the torchrun of the PyTorch this ftbench was built against "
        "(LibTorch {}), or `ftbench run --nproc-per-node N` on one machine",
        e.what(), TORCH_VERSION));
  }
}

std::unique_ptr<Communicator> node_communicator_for(const Launch& launch,
                                                    const CommunicatorOptions& options) {
  if (launch.local_world_size <= 1) return std::make_unique<Communicator>();
  // Rank 0 serves the job's store already (communicator_for): every rank a client here.
  Launch client = launch;
  client.agent_store = true;
  CommunicatorOptions node = options;
  node.heartbeats = false;  // the job's group has them
  node.self_name =
      fmt::format("rank {} of {} (local rank {} of {} on node {})", launch.rank, launch.world_size,
                  launch.local_rank, launch.local_world_size, launch.node_rank);
  node.peer_name = "local rank";
  return std::make_unique<Communicator>(
      connect_store(client, options.init_timeout, options.stop_requested),
      launch.store_prefix() + fmt::format("node{}/", launch.node_rank), launch.local_rank,
      launch.local_world_size, launch.master_addr, node);
}

}  // namespace ftbench::dist
