// The `ftbench` command: sets up the OpenMP environment, then becomes ftbench-bin.
//
// libgomp reads OMP_WAIT_POLICY once, when it is loaded, which happens before main() of any
// program linked against LibTorch. Its default lets idle OpenMP workers spin, and on a small
// CPU they then compete with OpenBLAS's own threads for the same cores: on the 2-core CI
// machine the cpu-bench step took 1.11-1.19 s with the default policy and 0.56-0.59 s with
// PASSIVE (docs/benchmarks.md). This launcher links nothing heavy and exec()s the real program in
// the same process (same PID and start time), so launch timing stays honest. A value the user set
// is kept.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

int main(int argc, char** argv) {
  (void)argc;
  setenv("OMP_WAIT_POLICY", "PASSIVE", /*overwrite=*/0);
  char self[4096];
  const ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  std::string target = "ftbench-bin";
  if (n > 0) {
    self[n] = '\0';
    std::string path(self);
    const size_t slash = path.rfind('/');
    target = path.substr(0, slash + 1) + "ftbench-bin";
  }
  execv(target.c_str(), argv);
  std::fprintf(stderr, "error: cannot start %s: %s\n", target.c_str(), std::strerror(errno));
  return 1;
}
