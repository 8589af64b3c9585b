// One rank of a process group for tests/train/dist/torch/process_ranks_test.cpp: a separate process
// (the ranks of a job are processes, not threads), over a FileStore or a TCPStore.
//
//   ftbench_test_store_rank file PATH RANK WORLD OUT
//   ftbench_test_store_rank tcp PORT RANK WORLD OUT
//
// Writes to OUT one line of what the collectives gave: the all-reduce sum of rank + 1, the
// all-gather of [rank, rank + 0.5] (fp32) and of 1e30 x (rank + 1) (bf16, whose bits must
// survive), each value with %.9g. Exit code 0, or 3 with the error on stderr.
//
//   ftbench_test_store_rank serve PORT_FILE DONE_FILE
//
// Stands in for torchrun's agent (tests/e2e/distributed_test.cpp): serves a TCPStore of this
// LibTorch, the class torchrun's agent serves its store with, on a free port it writes to
// PORT_FILE (whole, by rename), until DONE_FILE exists (at most 120 s).

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <thread>

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include "train/dist/torch/communicator.h"

namespace {

int serve(const std::string& port_file, const std::string& done_file) {
  try {
    ftbench::dist::Launch launch;  // rank 0 of a job whose store no agent serves: the server
    launch.kind = ftbench::dist::LaunchKind::kTorchrun;
    launch.rank = 0;
    launch.world_size = 3;
    launch.master_addr = "127.0.0.1";
    launch.master_port = 0;  // a free one
    const c10::intrusive_ptr<c10d::Store> store =
        ftbench::dist::connect_store(launch, std::chrono::seconds(60));
    const auto* tcp = dynamic_cast<const c10d::TCPStore*>(store.get());
    if (tcp == nullptr) throw std::runtime_error("connect_store gave no TCPStore");
    std::ofstream(port_file + ".tmp") << tcp->getPort();
    std::filesystem::rename(port_file + ".tmp", port_file);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    while (!std::filesystem::exists(done_file) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "store: %s\n", e.what());
    return 3;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::string(argv[1]) == "serve") return serve(argv[2], argv[3]);
  if (argc != 6) {
    std::fprintf(stderr,
                 "usage: %s file|tcp PATH|PORT RANK WORLD OUT | serve PORT_FILE DONE_FILE\n",
                 argv[0]);
    return 2;
  }
  const std::string kind = argv[1];
  const int rank = std::atoi(argv[3]);
  const int world = std::atoi(argv[4]);
  try {
    ftbench::dist::CommunicatorOptions options;
    options.init_timeout = std::chrono::seconds(30);
    options.timeout = std::chrono::seconds(30);
    c10::intrusive_ptr<c10d::Store> store;
    if (kind == "file") {
      store = c10::make_intrusive<c10d::FileStore>(argv[2], world);
    } else {
      ftbench::dist::Launch launch;
      launch.kind = ftbench::dist::LaunchKind::kTorchrun;
      launch.rank = rank;
      launch.world_size = world;
      launch.master_addr = "127.0.0.1";
      launch.master_port = std::atoi(argv[2]);
      store = ftbench::dist::connect_store(launch, options.init_timeout);
    }
    ftbench::dist::Communicator c(store, "test/", rank, world, "127.0.0.1", options);
    at::Tensor sum = at::full({1}, double(rank + 1), at::kFloat);
    c.all_reduce_sum(sum);
    const at::Tensor mine = at::tensor({double(rank), double(rank) + 0.5}, at::kFloat);
    at::Tensor all = at::zeros({2 * world}, at::kFloat);
    const at::Tensor bf_mine = at::full({1}, 1e30 * double(rank + 1), at::kFloat).to(at::kBFloat16);
    at::Tensor bf_all = at::zeros({world}, at::kBFloat16);
    c.start_all_gather(all, mine)->wait();
    c.start_all_gather(bf_all, bf_mine)->wait();
    c.barrier();
    std::FILE* out = std::fopen(argv[5], "w");
    if (out == nullptr) return 3;
    std::fprintf(out, "%.9g", sum.item<double>());
    for (int64_t i = 0; i < all.numel(); ++i) std::fprintf(out, " %.9g", all[i].item<double>());
    const at::Tensor wide = bf_all.to(at::kFloat);
    for (int64_t i = 0; i < wide.numel(); ++i) std::fprintf(out, " %.9g", wide[i].item<double>());
    std::fprintf(out, "\n");
    std::fclose(out);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    return 3;
  }
}
