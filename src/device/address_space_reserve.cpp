#include "device/address_space_reserve.h"

#include <sys/mman.h>

namespace ftbench::device {

AddressSpaceReserve::AddressSpaceReserve(std::size_t bytes) {
  if (bytes == 0) return;
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return;
  start_ = p;
  bytes_ = bytes;
}

AddressSpaceReserve::~AddressSpaceReserve() { release(); }

std::size_t AddressSpaceReserve::release() {
  if (start_ == nullptr) return 0;
  ::munmap(start_, bytes_);
  const std::size_t released = bytes_;
  start_ = nullptr;
  bytes_ = 0;
  return released;
}

}  // namespace ftbench::device

namespace ftbench::device {

AddressSpaceReserve& failure_reserve() {
  static AddressSpaceReserve reserve(kFailureReserveBytes);
  return reserve;
}

bool release_room_for_failure_path() {
  if (failure_reserve().release() > 0) return true;
  return AddressSpaceReserve(kFailureReserveBytes).bytes() > 0;
}

}  // namespace ftbench::device
