// The safetensors file format (Hugging Face): an 8-byte little-endian header length N, N bytes
// of JSON naming each tensor's dtype, shape and byte range, then the tensors' bytes. Reading
// validates everything the format promises before a byte of tensor data is trusted; writing
// produces files that the reference implementation (the `safetensors` Python package) loads.
// Torch-free: tensors are bytes here; the LibTorch side copies them in and out.
#pragma once

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "util/error.h"

namespace ftbench::io {

// A file that is not a valid safetensors file, or that cannot be read or written. what() starts
// with the file's path.
class SafetensorsError : public RunFailed {
 public:
  using RunFailed::RunFailed;
};

// Bytes per element of a safetensors dtype name ("F32", "BF16", "I64", ...); 0 for a name the
// format does not define (sub-byte types such as F4 are not supported).
int64_t safetensors_dtype_bytes(std::string_view dtype);

struct TensorInfo {
  std::string name;
  std::string dtype;           // as in the file: "F32", "BF16", ...
  std::vector<int64_t> shape;  // empty: a scalar (one element)
  uint64_t begin = 0;          // byte range [begin, end) from the start of the data section
  uint64_t end = 0;
  int64_t elements() const;
};

struct SafetensorsIndex {
  std::vector<TensorInfo> tensors;                      // in data order (ascending offsets)
  std::map<std::string, std::string> metadata;          // "__metadata__", string to string
  uint64_t data_start = 0;                              // 8 + N: where offset 0 of the data lies
  const TensorInfo* find(std::string_view name) const;  // null when absent
};

// Parses and validates the start of a safetensors file. `file_start` holds the file's first
// bytes (at least 8 + N of them), `file_size` the whole file's size. Checks: N within the file
// and at most 100 MB; the header a JSON object whose entries are tensors with a known dtype, a
// shape of non-negative integers and data_offsets [begin, end] with end - begin = elements x
// dtype size; the tensors' ranges together cover the data section exactly, without gaps or
// overlaps (as the reference implementation requires); "__metadata__", if present, maps
// strings to strings. Throws SafetensorsError "<source>: ..." naming the tensor and what was
// expected and found.
SafetensorsIndex parse_safetensors_index(std::string_view file_start, uint64_t file_size,
                                         const std::string& source);

// A safetensors file opened for reading, memory-mapped read-only: a tensor's bytes are read
// where they lie in the page cache, without a copy in host memory, and only the tensors used
// are ever paged in. The header is validated before any tensor is touched, so every range
// handed out lies inside the file. Not copyable; const members are safe from several threads.
// (A file truncated by another process while mapped raises SIGBUS on access, as with any
// mapping; ftbench reads files it does not expect to change under it.)
class SafetensorsReader {
 public:
  explicit SafetensorsReader(const std::string& path);  // maps and validates the header
  ~SafetensorsReader();
  SafetensorsReader(const SafetensorsReader&) = delete;
  SafetensorsReader& operator=(const SafetensorsReader&) = delete;

  const SafetensorsIndex& index() const { return index_; }
  const std::string& path() const { return path_; }
  uint64_t file_bytes() const { return size_; }
  // The tensor's bytes (end - begin of them) inside the mapping; valid while the reader lives.
  const void* tensor_data(const TensorInfo& tensor) const;
  // Copies the tensor's bytes into `destination`.
  void read_tensor(const TensorInfo& tensor, void* destination) const;

 private:
  std::string path_;
  const unsigned char* map_ = nullptr;
  uint64_t size_ = 0;
  SafetensorsIndex index_;
};

struct TensorToWrite {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  const void* data = nullptr;  // elements x dtype size bytes, little-endian
};

// Writes a safetensors file at `path` (created or truncated; the caller makes it atomic by
// writing into a temporary folder or name and renaming), fsync'd before returning. Tensors are
// laid out in the order given; the header is padded with spaces so the data starts 8-byte
// aligned. Throws SafetensorsError naming the path and the reason (a duplicate or empty name,
// a bad dtype, a write error such as "No space left on device"). `write_kind` names the file's
// kind for FTBENCH_INJECT_WRITE_FAILURE (io::write_all; a testing aid).
void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata,
                       std::string_view write_kind = "safetensors");

// A tensor's name, dtype and shape: what the header says of it, without its bytes.
struct TensorLayout {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
};

// The same file written tensor by tensor, for callers that should hold one tensor in host
// memory at a time (the merged export of a large model): the constructor creates the file and
// writes the header for `layout`; write_next() appends the next tensor's bytes, in layout order;
// finish() fsyncs and closes. Errors as write_safetensors, plus a call out of order or a byte
// count that differs from the header's. A writer destroyed before finish() closes the file and
// leaves it incomplete: the caller removes it. Not copyable; one thread at a time.
class SafetensorsWriter {
 public:
  SafetensorsWriter(std::string path, const std::vector<TensorLayout>& layout,
                    const std::map<std::string, std::string>& metadata,
                    std::string_view write_kind = "safetensors");
  ~SafetensorsWriter();
  SafetensorsWriter(const SafetensorsWriter&) = delete;
  SafetensorsWriter& operator=(const SafetensorsWriter&) = delete;

  // `bytes` (elements x dtype size, little-endian) of the next tensor in the layout.
  void write_next(const void* data, uint64_t bytes);
  void finish();
  // The size the whole file has once finished: 8 + header + every tensor's bytes.
  uint64_t file_bytes() const { return file_bytes_; }

 private:
  void write_bytes(const void* data, uint64_t size);

  std::string path_;
  std::string write_kind_;
  std::vector<std::string> names_;
  std::vector<uint64_t> sizes_;
  size_t next_ = 0;
  uint64_t file_bytes_ = 0;
  int fd_ = -1;
};

}  // namespace ftbench::io
