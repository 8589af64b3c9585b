// Address space held back for the failure path. Under an address-space limit (ulimit -v,
// RLIMIT_AS) a run that fails for want of memory still has to build and write its failed report;
// the JSON library frees a document by allocating (nlohmann::json's destructor reserves a stack),
// so an allocation that fails while the report is built ends the process in std::terminate
// instead of exit 3 with a report. A run holds this reserve from its start and releases it before
// the failed report is built. It is a private mapping that is never touched: it counts against
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

// What a run holds back: enough for the failed report of a run of some thousand steps.
inline constexpr std::size_t kFailureReserveBytes = std::size_t{32} << 20;

}  // namespace ftbench::device
