// A stand-in for a PyTorch wheel's libtorch_cpu.so, which exports the std::filesystem it linked
// statically from a newer libstdc++ (cmake/FtbenchLinkOrder.cmake): this one exports a
// std::filesystem::remove_all that says it ran and ends the program. Defining a function of
// namespace std is what the wheel does; here it is the point of the test.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <system_error>

namespace std::filesystem {

std::uintmax_t remove_all(const path& p) {
  std::fprintf(stderr, "the shadow remove_all ran (%s)\n", p.c_str());
  std::_Exit(3);
}

std::uintmax_t remove_all(const path& p, std::error_code&) {
  std::fprintf(stderr, "the shadow remove_all ran (%s)\n", p.c_str());
  std::_Exit(3);
}

}  // namespace std::filesystem

// Something the program uses, so that it links this library as it links LibTorch.
extern "C" int fake_torch_cpu_version() { return 211; }
