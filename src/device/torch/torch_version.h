// Compile-time LibTorch version checks: the code builds against Debian's 1.13 and the 2.x wheels
// (../shared/design/LIBTORCH.md), and branches on the version where an API differs.
#pragma once

#include <torch/version.h>

// True when the LibTorch being compiled against is `major.minor` or newer.
#define FTBENCH_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||          \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))
