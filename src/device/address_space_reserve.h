// Address space held back for the failure path. Under an address-space limit (ulimit -v,
// RLIMIT_AS) a run that fails for want of memory still has to build and write its failed report;
// the JSON library frees a document by allocating (nlohmann::json's destructor reserves a stack),
// so an allocation that fails while the report is built ends the process in std::terminate
// instead of exit 3. ftbench-bin takes the process's reserve first thing in main (before the
// thread pools and the model take their share), and a failing run releases it before it builds
// its failed report; where there is no reserve and no room for one, the run writes no report
// rather than risk it. The reserve is a private mapping that is never touched: it counts against
// RLIMIT_AS and RLIMIT_DATA (and the commit charge under strict overcommit), and costs no
// resident memory.
#pragma once

#include <cstddef>

namespace ftbench::device {

class AddressSpaceReserve {
 public:
  // Maps `bytes`; holds nothing when the mapping is refused (the limit is already that tight).
  explicit AddressSpaceReserve(std::size_t bytes);
  ~AddressSpaceReserve();
  AddressSpaceReserve(const AddressSpaceReserve&) = delete;
  AddressSpaceReserve& operator=(const AddressSpaceReserve&) = delete;

  // Gives the reserve back; returns the bytes released (0 when none was held, or again).
  std::size_t release();
  std::size_t bytes() const { return bytes_; }

 private:
  void* start_ = nullptr;
  std::size_t bytes_ = 0;
};

// What the failure path needs: enough for the failed report of a run of some thousand steps.
inline constexpr std::size_t kFailureReserveBytes = std::size_t{32} << 20;

// The process's reserve of kFailureReserveBytes, taken at the first call (ftbench-bin's main).
AddressSpaceReserve& failure_reserve();

// Whether the failure path has room: the process's reserve, released now, or that much address
// space free at this moment (mapped and given back at once).
bool release_room_for_failure_path();

}  // namespace ftbench::device
