// device/amd_smi_layout.h against the structures as AMD's headers declare them: the two
// amdsmi_power_info_t layouts are written out below from amdsmi.h (ROCm/amdsmi: rocm-6.2.0,
// AMDSMI_LIB_VERSION 24.6; and a 26.1 header), filled as the library would fill them, and read
// back through the byte-level reader the HIP query module uses.
#include "device/amd_smi_layout.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace amd = ftbench::device::amd_smi;

namespace {

// amdsmi.h up to 24.x (rocm-6.0.0 to rocm-6.2.x).
struct PowerInfo24 {
  uint32_t current_socket_power;
  uint32_t average_socket_power;
  uint32_t gfx_voltage;
  uint32_t soc_voltage;
  uint32_t mem_voltage;
  uint32_t power_limit;
  uint32_t reserved[11];
};

// amdsmi.h from 25.x (AMDSMI_LIB_VERSION_MAJOR 26 in the header read).
struct PowerInfo26 {
  uint64_t socket_power;
  uint32_t current_socket_power;
  uint32_t average_socket_power;
  uint64_t gfx_voltage;
  uint64_t soc_voltage;
  uint64_t mem_voltage;
  uint32_t power_limit;
  uint64_t reserved[18];
};

template <class T>
std::vector<unsigned char> bytes_of(const T& value) {
  std::vector<unsigned char> out(sizeof(T));
  std::memcpy(out.data(), &value, sizeof(T));
  return out;
}

template <class T>
std::optional<uint32_t> read(const T& info, amd::PowerInfoLayout layout) {
  const std::vector<unsigned char> b = bytes_of(info);
  return amd::socket_watts(b.data(), b.size(), layout);
}

}  // namespace

TEST(AmdSmiLayout, TheVersionWordSaysTheLayout) {
  // amdsmi_version_t: {year 23, major 4} (ROCm 6.0), {24, 7}, then {major 25, ...}, {26, ...}.
  EXPECT_EQ(amd::power_info_layout(23), amd::PowerInfoLayout::kUpTo24);
  EXPECT_EQ(amd::power_info_layout(24), amd::PowerInfoLayout::kUpTo24);
  EXPECT_EQ(amd::power_info_layout(25), amd::PowerInfoLayout::kFrom25);
  EXPECT_EQ(amd::power_info_layout(26), amd::PowerInfoLayout::kFrom25);
}

TEST(AmdSmiLayout, ReadsTheCurrentThenTheAverageSocketPowerUpTo24) {
  PowerInfo24 mi300{};
  mi300.current_socket_power = 712;
  mi300.average_socket_power = 650;
  mi300.gfx_voltage = 900;
  EXPECT_EQ(read(mi300, amd::PowerInfoLayout::kUpTo24), 712u);

  PowerInfo24 mi250{};
  mi250.current_socket_power = 0xFFFF;  // not available on MI200
  mi250.average_socket_power = 480;
  EXPECT_EQ(read(mi250, amd::PowerInfoLayout::kUpTo24), 480u);

  PowerInfo24 none{};
  none.current_socket_power = 0xFFFFFFFFu;
  none.average_socket_power = 0xFFFF;
  EXPECT_EQ(read(none, amd::PowerInfoLayout::kUpTo24), std::nullopt);
}

TEST(AmdSmiLayout, ReadsTheCurrentThenTheSocketThenTheAveragePowerFrom25) {
  PowerInfo26 mi300{};
  mi300.socket_power = 705;
  mi300.current_socket_power = 712;
  mi300.average_socket_power = 0xFFFFFFFFu;
  mi300.gfx_voltage = 900;
  EXPECT_EQ(read(mi300, amd::PowerInfoLayout::kFrom25), 712u);

  PowerInfo26 socket_only{};
  socket_only.socket_power = 530;
  socket_only.current_socket_power = 0xFFFFFFFFu;
  socket_only.average_socket_power = 0xFFFFFFFFu;
  EXPECT_EQ(read(socket_only, amd::PowerInfoLayout::kFrom25), 530u);

  PowerInfo26 average_only{};
  average_only.socket_power = UINT64_MAX;
  average_only.current_socket_power = 0xFFFFFFFFu;
  average_only.average_socket_power = 480;
  EXPECT_EQ(read(average_only, amd::PowerInfoLayout::kFrom25), 480u);

  PowerInfo26 none{};
  none.socket_power = UINT64_MAX;
  none.current_socket_power = 0xFFFFFFFFu;
  none.average_socket_power = 0xFFFFFFFFu;
  EXPECT_EQ(read(none, amd::PowerInfoLayout::kFrom25), std::nullopt);
}

TEST(AmdSmiLayout, TheWrongLayoutWouldMisreadAMi300) {
  // Why the version matters: a 26.x structure read as 24.x takes the low half of socket_power
  // for the current power and its high half (0) for the average.
  PowerInfo26 info{};
  info.socket_power = 0xFFFFFFFFFFFFFFFFull;
  info.current_socket_power = 712;
  EXPECT_EQ(read(info, amd::PowerInfoLayout::kFrom25), 712u);
  EXPECT_EQ(read(info, amd::PowerInfoLayout::kUpTo24), std::nullopt);
}

TEST(AmdSmiLayout, ShortBuffersAndOutOfRangeWattsGiveNothing) {
  const unsigned char few[8] = {0xC8, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(amd::socket_watts(few, sizeof few, amd::PowerInfoLayout::kUpTo24), std::nullopt);
  EXPECT_EQ(amd::valid_watts(0), std::nullopt);
  EXPECT_EQ(amd::valid_watts(uint64_t{1} << 33), std::nullopt);
  EXPECT_EQ(amd::valid_watts(750), 750u);
}

TEST(AmdSmiLayout, PciAddressWordsOfBothLibraries) {
  // 0000:c1:00.0, a typical MI300X slot, and a second PCI domain.
  EXPECT_EQ(amd::amd_smi_bdf(0, 0xC1, 0, 0), 0xC100u);
  EXPECT_EQ(amd::rocm_smi_bdfid(0, 0xC1, 0, 0), 0xC100u);
  EXPECT_EQ(amd::amd_smi_bdf(1, 0x2a, 0x1f, 7), (uint64_t{1} << 16) | 0x2aFFu);
  EXPECT_EQ(amd::rocm_smi_bdfid(1, 0x2a, 0x1f, 7), (uint64_t{1} << 32) | 0x2aFFu);
  // ROCm 6 puts a partition id in bits 28-31: the same device.
  const uint64_t partitioned = amd::rocm_smi_bdfid(1, 0x2a, 0x1f, 7) | (uint64_t{3} << 28);
  EXPECT_EQ(amd::rocm_smi_address(partitioned),
            amd::rocm_smi_address(amd::rocm_smi_bdfid(1, 0x2a, 0x1f, 7)));
  EXPECT_NE(amd::rocm_smi_address(amd::rocm_smi_bdfid(2, 0x2a, 0x1f, 7)),
            amd::rocm_smi_address(amd::rocm_smi_bdfid(1, 0x2a, 0x1f, 7)));
}
