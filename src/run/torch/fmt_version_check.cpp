// A build check, no code: the fmt headers that ftbench_torch's files see, LibTorch's include
// directories among theirs, must be those of the libfmt they link. PyTorch wheels bundle a newer
// fmt in torch/include, and cmake/FtbenchTorchIncludes.cmake puts the system's in front; should
// it still come first, this fails at compile time and says why, instead of the link failing on
// undefined fmt:: symbols (or two fmt versions meeting in one program).
#include <fmt/core.h>

#ifndef FTBENCH_LIBFMT_VERSION
#error "FTBENCH_LIBFMT_VERSION (the version find_package(fmt) found, as FMT_VERSION) is not set"
#endif
static_assert(FMT_VERSION == FTBENCH_LIBFMT_VERSION,
              "the fmt headers on the include path are not those of the libfmt linked: LibTorch's "
              "bundled fmt (torch/include/fmt) shadows the system's; see "
              "cmake/FtbenchTorchIncludes.cmake");
