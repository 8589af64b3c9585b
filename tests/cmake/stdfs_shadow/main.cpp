// ctest stdfs_shadow_{fixed,unfixed}: a program that links a library exporting its own
// std::filesystem::remove_all (fake_torch_cpu.cpp, as a PyTorch wheel's libtorch_cpu.so does)
// removes a folder with std::filesystem::remove_all. Fixed (cmake/FtbenchLinkOrder.cmake), the
// system libstdc++'s runs: the folder is gone, exit 0. Unfixed, the library's runs and says so.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <system_error>

extern "C" int fake_torch_cpu_version();

int main() {
  namespace fs = std::filesystem;
  if (fake_torch_cpu_version() != 211) return 2;
  const fs::path dir = fs::temp_directory_path() / "ftbench-stdfs-shadow";
  std::error_code ec;
  fs::create_directories(dir / "sub", ec);
  std::ofstream(dir / "sub" / "file") << "x";
  const auto removed = fs::remove_all(dir);
  if (fs::exists(dir) || removed != 3) {
    std::fprintf(stderr, "remove_all removed %ju entries, the folder %s\n",
                 static_cast<std::uintmax_t>(removed),
                 fs::exists(dir) ? "is still there" : "is gone");
    return 1;
  }
  std::printf("libstdc++'s remove_all removed %ju entries\n", static_cast<std::uintmax_t>(removed));
  return 0;
}
