#pragma once
// What the HIP query module (src/device/query_modules/hip_query.cpp) needs to know about the
// layouts of AMD's two management libraries, which it opens with dlopen and never includes: pure
// functions, torch- and HIP-free, so that they are tested on every machine.
//
// - AMD SMI (libamd_smi.so, ROCm 6 and later): amdsmi_power_info_t changed with the library's
//   ABI version (AMDSMI_LIB_VERSION_MAJOR, "changed for every header change that breaks ABI").
//   Up to 24.x (ROCm 6.0 to 6.3; amdsmi_version_t then began with the year, 23 or 24, before
//   the major version 4 to 7) it begins {uint32 current_socket_power; uint32
//   average_socket_power; ...}. From 25.x (amdsmi_version_t without the year, major first) it
//   begins {uint64 socket_power; uint32 current_socket_power; uint32 average_socket_power; ...}.
//   All in watts; 0xFFFF, 0xFFFFFFFF (and UINT64_MAX) mean "not available".
// - ROCm SMI (librocm_smi64, ROCm 5 and the one Debian packages): a device's PCI address is
//   ((domain & 0xffffffff) << 32) | (bus << 8) | (device << 3) | function (rsmi_dev_pci_id_get),
//   power in microwatts. AMD SMI's amdsmi_bdf_t puts the domain at bit 16 instead.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>

namespace ftbench::device::amd_smi {

// The two layouts of amdsmi_power_info_t (header above).
enum class PowerInfoLayout { kUpTo24, kFrom25 };

// The layout that goes with what amdsmi_get_lib_version wrote: its first 32-bit word is the
// year (23, 24) up to 24.x and the major version (25 and later) after.
inline PowerInfoLayout power_info_layout(uint32_t first_version_word) {
  return first_version_word >= 25 ? PowerInfoLayout::kFrom25 : PowerInfoLayout::kUpTo24;
}

// A socket power in watts as the library gives it, or nullopt for 0 and the "not available"
// markers.
inline std::optional<uint32_t> valid_watts(uint64_t w) {
  if (w == 0 || w == 0xFFFFu || w == 0xFFFFFFFFu || w == UINT64_MAX || w > 0xFFFFFFFFu) {
    return std::nullopt;
  }
  return static_cast<uint32_t>(w);
}

// The board (socket) power in watts from the bytes amdsmi_get_power_info wrote (at least 16):
// the current socket power where the device gives it (MI300 and later), else the generic
// socket power (25.x and later), else the average (MI200 and earlier); nullopt when none.
inline std::optional<uint32_t> socket_watts(const unsigned char* info, std::size_t size,
                                            PowerInfoLayout layout) {
  if (size < 16) return std::nullopt;
  auto u32 = [info](std::size_t at) {
    uint32_t v = 0;
    std::memcpy(&v, info + at, sizeof v);
    return v;
  };
  if (layout == PowerInfoLayout::kUpTo24) {
    if (auto w = valid_watts(u32(0))) return w;
    return valid_watts(u32(4));
  }
  uint64_t socket = 0;
  std::memcpy(&socket, info, sizeof socket);
  if (auto w = valid_watts(u32(8))) return w;
  if (auto w = valid_watts(socket)) return w;
  return valid_watts(u32(12));
}

// amdsmi_bdf_t as a 64-bit word: function bits 0-2, device 3-7, bus 8-15, domain 16-63.
inline uint64_t amd_smi_bdf(uint32_t domain, uint32_t bus, uint32_t device, uint32_t function) {
  return (uint64_t{domain} << 16) | (uint64_t{bus & 0xFFu} << 8) | (uint64_t{device & 0x1Fu} << 3) |
         uint64_t{function & 0x7u};
}

// rsmi_dev_pci_id_get's word: function bits 0-2, device 3-7, bus 8-15, domain 32-63.
inline uint64_t rocm_smi_bdfid(uint32_t domain, uint32_t bus, uint32_t device, uint32_t function) {
  return (uint64_t{domain} << 32) | (uint64_t{bus & 0xFFu} << 8) | (uint64_t{device & 0x1Fu} << 3) |
         uint64_t{function & 0x7u};
}

// ROCm SMI's bdfid with bits 16-31 cleared (ROCm 6 puts a compute partition's id in bits
// 28-31; 16-27 are reserved), for comparing with an address from the HIP runtime.
inline uint64_t rocm_smi_address(uint64_t bdfid) { return bdfid & ~uint64_t{0xFFFF0000u}; }

}  // namespace ftbench::device::amd_smi
