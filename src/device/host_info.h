// Facts about the host machine, for the report's environment: no environment variables,
// nothing secret.
#pragma once

#include "device/facts.h"

namespace ftbench::device {

// Hostname, OS (PRETTY_NAME of /etc/os-release), kernel release, CPU model, logical cores and
// physical memory.
HostFacts host_info();

}  // namespace ftbench::device
