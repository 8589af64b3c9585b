// The one function each fuzz target defines (fuzz/<target>.cpp): feeds `size` bytes at `data` to
// one of ftbench's parsers of outside files. Errors that mean "bad input" (the parser's own
// exception type) are caught inside and are fine; anything that leaves it (another exception, a
// crash, a sanitizer report) is a finding. Linked with libfuzzer_main.cpp into a libFuzzer
// executable (FTBENCH_FUZZ builds) and with replay_test.cpp into a ctest that replays the seed
// corpus and every regression input (every build).
#pragma once

#include <cstddef>
#include <cstdint>

int ftbench_fuzz_one(const uint8_t* data, size_t size);
