// The one function each fuzz target defines (fuzz/<target>.cpp): feeds `size` bytes at `data` to
// one of ftbench's parsers of outside files. Errors that mean "bad input" (the parser's own
// exception type) are caught inside and are fine; anything that leaves it (another exception, a
// crash, a sanitizer report) is a finding. Linked with libfuzzer_main.cpp into a libFuzzer
// executable (FTBENCH_FUZZ builds) and with replay_test.cpp into a ctest that replays the seed
// corpus and every regression input (every build).
#pragma once

#include <cstddef>
#include <cstdint>

// What the parser made of an input: refused it as bad input, or accepted it (and the target
// then did with it what ftbench does). The replay test requires some seeds of each target to
// be accepted, so that a parser refusing everything (whose fuzzing would only ever reach its
// first error) fails there; libFuzzer ignores it.
enum class FuzzVerdict { kRejected, kAccepted };

FuzzVerdict ftbench_fuzz_one(const uint8_t* data, size_t size);
