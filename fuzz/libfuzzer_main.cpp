// libFuzzer's entry point for one fuzz target: libFuzzer's main() calls it once per input.
#include "fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ftbench_fuzz_one(data, size);
  return 0;  // libFuzzer reserves other values
}
