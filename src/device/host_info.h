// Facts about the host machine for the report: no environment variables, nothing secret.
#pragma once

#include "report/report.h"

namespace ftbench::device {

// Hostname, OS (PRETTY_NAME of /etc/os-release), kernel release, CPU model, logical cores and
// physical memory.
report::HostInfo host_info();

}  // namespace ftbench::device
