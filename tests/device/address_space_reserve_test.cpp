#include "device/address_space_reserve.h"

#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#if defined(__SANITIZE_ADDRESS__)
#define FTBENCH_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FTBENCH_UNDER_ASAN 1
#endif
#endif

namespace ftbench::device {
namespace {

constexpr std::size_t kMiB = std::size_t{1} << 20;

// This process's mapped size (VmSize), in bytes.
std::size_t mapped_bytes() {
  std::ifstream in("/proc/self/status");
  std::string key;
  while (in >> key) {
    if (key == "VmSize:") {
      std::size_t kb = 0;
      in >> kb;
      return kb * 1024;
    }
    std::getline(in, key);
  }
  return 0;
}

bool can_map(std::size_t bytes) {
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return false;
  ::munmap(p, bytes);
  return true;
}

// In a child under an address-space limit: with the reserve held and everything else mapped
// until nothing more fits, 16 MiB cannot be mapped; once the reserve is released, it can. The
// exit status says which step failed (0: none).
int child_under_a_limit() {
  const rlimit limit{mapped_bytes() + 64 * kMiB, mapped_bytes() + 64 * kMiB};
  if (::setrlimit(RLIMIT_AS, &limit) != 0) return 10;
  AddressSpaceReserve reserve(32 * kMiB);
  if (reserve.bytes() != 32 * kMiB) return 11;
  while (::mmap(nullptr, kMiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) !=
         MAP_FAILED) {
  }
  if (can_map(16 * kMiB)) return 12;
  if (reserve.release() != 32 * kMiB) return 13;
  if (!can_map(16 * kMiB)) return 14;
  if (reserve.release() != 0) return 15;  // once
  return 0;
}

// The process's reserve: taken at the first call; the failure path has room once (the reserve),
// then only while that much address space is free.
int child_with_the_process_reserve() {
  const rlimit limit{mapped_bytes() + 64 * kMiB, mapped_bytes() + 64 * kMiB};
  if (::setrlimit(RLIMIT_AS, &limit) != 0) return 20;
  if (failure_reserve().bytes() != kFailureReserveBytes) return 21;
  while (::mmap(nullptr, kMiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) !=
         MAP_FAILED) {
  }
  if (!release_room_for_failure_path()) return 22;  // the reserve, given back
  if (failure_reserve().bytes() != 0) return 23;
  if (!can_map(16 * kMiB)) return 24;
  // Fill what the reserve left: no reserve, no room.
  while (::mmap(nullptr, kMiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) !=
         MAP_FAILED) {
  }
  if (release_room_for_failure_path()) return 25;
  return 0;
}

int status_of_child(int (*body)()) {
  const pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) ::_exit(body());
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -2;
  return WEXITSTATUS(status);
}

TEST(AddressSpaceReserve, ReleasingItLetsAnAllocationThroughThatTheLimitRefused) {
#ifdef FTBENCH_UNDER_ASAN
  GTEST_SKIP() << "AddressSanitizer maps terabytes of shadow memory: no address-space limit";
#endif
  EXPECT_EQ(status_of_child(child_under_a_limit), 0) << "the step that failed (see the child)";
}

TEST(AddressSpaceReserve, TheFailurePathHasRoomOnceFromTheReserveThenOnlyWhereThereIsSome) {
#ifdef FTBENCH_UNDER_ASAN
  GTEST_SKIP() << "AddressSanitizer maps terabytes of shadow memory: no address-space limit";
#endif
  EXPECT_EQ(status_of_child(child_with_the_process_reserve), 0)
      << "the step that failed (see the child)";
}

TEST(AddressSpaceReserve, AReserveThatCannotBeMappedHoldsNothing) {
  AddressSpaceReserve none(0);
  EXPECT_EQ(none.bytes(), 0u);
  EXPECT_EQ(none.release(), 0u);
  // More than any address space: refused, so nothing is held.
  AddressSpaceReserve too_big(std::size_t{1} << 62);
  EXPECT_EQ(too_big.bytes(), 0u);
}

}  // namespace
}  // namespace ftbench::device
