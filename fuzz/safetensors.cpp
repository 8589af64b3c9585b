// Fuzz target: the safetensors header parser (io::parse_safetensors_index, what
// SafetensorsReader runs on a mapped file before any tensor is touched; checkpoints' tensor
// files and, later, Hugging Face checkpoints). Every tensor of an accepted index must lie inside
// the data: the bytes are then read, as the reader would, to let ASan check it.
#include <stdexcept>
#include <string>
#include <string_view>

#include "fuzz_target.h"
#include "util/io/safetensors.h"

FuzzVerdict ftbench_fuzz_one(const uint8_t* data, size_t size) {
  namespace io = ftbench::io;
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  io::SafetensorsIndex index;
  try {
    index = io::parse_safetensors_index(bytes, size, "fuzz.safetensors");
  } catch (const io::SafetensorsError&) {
    return FuzzVerdict::kRejected;
  }
  // Summed into a volatile so that the reads of every byte are not optimised away.
  volatile uint64_t checksum = 0;
  for (const io::TensorInfo& t : index.tensors) {
    if (t.end < t.begin || index.data_start + t.end > size) {
      throw std::logic_error("an accepted tensor lies outside the file: " + t.name);
    }
    if (static_cast<uint64_t>(t.elements()) * io::safetensors_dtype_bytes(t.dtype) !=
        t.end - t.begin) {
      throw std::logic_error("an accepted tensor's size disagrees with its shape: " + t.name);
    }
    for (uint64_t i = t.begin; i < t.end; ++i) checksum += data[index.data_start + i];
  }
  static_cast<void>(checksum);  // a volatile read: the sum is observed
  return FuzzVerdict::kAccepted;
}
