// The bytes LibTorch's CPU tensors hold, counted exactly: the CPU counterpart of the GPU caching
// allocator's allocated bytes, for a CPU run's memory per phase (report schema 1.9) and for
// checking a memory prediction against a measurement. An allocator installed in front of
// LibTorch's own CPU allocator (c10::SetCPUAllocator) counts what each allocation asked for;
// tensors that wrap memory they do not own (from_blob over a mapped file) are not counted.
#pragma once

#include <cstdint>

namespace ftbench::device {

// Installs the counter; later calls do nothing. It is installed when the program starts, before
// any LibTorch work: memory LibTorch allocated raw before it (oneDNN's buffers) and released
// through it afterwards would not be its own. False where this LibTorch's allocator interface is
// not one ftbench knows (CMake's probe found none), or where LibTorch's CPU allocator has no raw
// deleter to hand the memory back to: nothing is counted then.
bool install_cpu_tensor_counter();

// For CPU memory that tensors own without LibTorch's allocator (the split base's host buffer
// pool, model/torch/base_units.h): `bytes` more (or fewer, when negative) held now.
void count_cpu_tensor_bytes(int64_t bytes);

// Whether the counter is installed and counting.
bool cpu_tensor_counter_installed();

// Bytes held now by tensors allocated since the install, and the most held at once since the
// last reset (or the install).
int64_t cpu_tensor_bytes();
int64_t cpu_tensor_peak_bytes();

// The peak becomes what is held now.
void reset_cpu_tensor_peak();

}  // namespace ftbench::device
