#include "util/io/safetensors.h"
#include "util/io/output_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "util/text/json_parse.h"

namespace ftbench::io {
namespace {

// The reference implementation's limit: a larger header is refused before it is read.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

[[noreturn]] void fail(const std::string& source, const std::string& message) {
  throw SafetensorsError(source + ": " + message);
}

uint64_t read_le64(std::string_view bytes) {
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[size_t(i)]);
  return n;
}

std::string le64(uint64_t n) {
  std::string bytes(8, '\0');
  for (size_t i = 0; i < 8; ++i) bytes[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return bytes;
}

TensorInfo parse_tensor(const std::string& source, const std::string& name,
                        const nlohmann::json& entry) {
  const std::string where = fmt::format("tensor \"{}\"", name);
  if (!entry.is_object()) fail(source, where + ": expected an object, found " + entry.type_name());
  TensorInfo t;
  t.name = name;
  const auto dtype = entry.find("dtype");
  if (dtype == entry.end() || !dtype->is_string()) {
    fail(source, where + ": expected \"dtype\" as a string");
  }
  t.dtype = dtype->get<std::string>();
  const int64_t element_bytes = safetensors_dtype_bytes(t.dtype);
  if (element_bytes == 0) {
    fail(source, fmt::format("{}: unknown dtype \"{}\" (expected one of BOOL, U8, I8, F8_E4M3, "
                             "F8_E5M2, I16, U16, F16, BF16, I32, U32, F32, I64, U64, F64)",
                             where, t.dtype));
  }
  const auto shape = entry.find("shape");
  if (shape == entry.end() || !shape->is_array()) {
    fail(source, where + ": expected \"shape\" as an array of integers");
  }
  uint64_t elements = 1;
  for (const nlohmann::json& d : *shape) {
    if (!d.is_number_unsigned() && !(d.is_number_integer() && d.get<int64_t>() >= 0)) {
      fail(source, fmt::format("{}: shape {}: expected integers >= 0", where, shape->dump()));
    }
    const uint64_t n = d.get<uint64_t>();
    if (n > uint64_t(INT64_MAX) || __builtin_mul_overflow(elements, n, &elements)) {
      fail(source, fmt::format("{}: shape {} is too large", where, shape->dump()));
    }
    t.shape.push_back(static_cast<int64_t>(n));
  }
  const auto offsets = entry.find("data_offsets");
  if (offsets == entry.end() || !offsets->is_array() || offsets->size() != 2 ||
      !(*offsets)[0].is_number_unsigned() || !(*offsets)[1].is_number_unsigned()) {
    fail(source, where + ": expected \"data_offsets\" as [begin, end], two integers >= 0");
  }
  t.begin = (*offsets)[0].get<uint64_t>();
  t.end = (*offsets)[1].get<uint64_t>();
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(elements, uint64_t(element_bytes), &bytes)) {
    fail(source, fmt::format("{}: shape {} is too large", where, shape->dump()));
  }
  if (t.end < t.begin || t.end - t.begin != bytes) {
    fail(source, fmt::format("{}: data_offsets [{}, {}] hold {} bytes, but {} {} of shape {} "
                             "take {}",
                             where, t.begin, t.end, t.end < t.begin ? 0 : t.end - t.begin, elements,
                             t.dtype, shape->dump(), bytes));
  }
  return t;
}

}  // namespace

int64_t safetensors_dtype_bytes(std::string_view dtype) {
  static const std::map<std::string_view, int64_t> kBytes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1},
      {"I16", 2},  {"U16", 2}, {"F16", 2}, {"BF16", 2},    {"I32", 4},
      {"U32", 4},  {"F32", 4}, {"I64", 8}, {"U64", 8},     {"F64", 8}};
  const auto it = kBytes.find(dtype);
  return it == kBytes.end() ? 0 : it->second;
}

int64_t TensorInfo::elements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

const TensorInfo* SafetensorsIndex::find(std::string_view name) const {
  for (const TensorInfo& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

SafetensorsIndex parse_safetensors_index(std::string_view file_start, uint64_t file_size,
                                         const std::string& source) {
  if (file_size < 8 || file_start.size() < 8) {
    fail(source, fmt::format("not a safetensors file: {} bytes, fewer than the 8 of the header "
                             "length",
                             file_size));
  }
  const uint64_t header_bytes = read_le64(file_start);
  if (header_bytes > kMaxHeaderBytes) {
    fail(source, fmt::format("not a safetensors file: the header length says {} bytes (at most "
                             "{} allowed)",
                             header_bytes, kMaxHeaderBytes));
  }
  if (header_bytes > file_size - 8) {
    fail(source, fmt::format("truncated: the header length says {} bytes, the file has {} after "
                             "the length",
                             header_bytes, file_size - 8));
  }
  if (file_start.size() < 8 + header_bytes) {
    fail(source, fmt::format("truncated: {} bytes of a {}-byte header", file_start.size() - 8,
                             header_bytes));
  }
  const std::string_view header_text = file_start.substr(8, header_bytes);
  if (header_text.empty() || header_text.front() != '{') {
    fail(source, "not a safetensors file: the header does not start with '{'");
  }
  const auto header =
      text::parse_json_text<nlohmann::json>(header_text, [&](const text::JsonTextError& e) {
        // Bytes counted in the file, whose header follows its 8-byte length.
        using Kind = text::JsonTextError::Kind;
        if (e.kind == Kind::kSyntax) {
          fail(source,
               fmt::format("the header is not valid JSON at byte {}: {}", 8 + e.byte, e.reason));
        }
        fail(source,
             "the header: " +
                 (e.kind == Kind::kTooDeep ? text::json_too_deep_message(8 + e.byte) : e.reason));
      });
  if (!header.is_object()) fail(source, "the header is not a JSON object");

  SafetensorsIndex index;
  index.data_start = 8 + header_bytes;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) fail(source, "\"__metadata__\": expected an object of strings");
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) {
          fail(source, fmt::format("\"__metadata__\".\"{}\": expected a string, found {}", key,
                                   value.type_name()));
        }
        index.metadata[key] = value.get<std::string>();
      }
      continue;
    }
    index.tensors.push_back(parse_tensor(source, name, entry));
  }
  std::sort(index.tensors.begin(), index.tensors.end(),
            [](const TensorInfo& a, const TensorInfo& b) {
              return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
            });
  const uint64_t data_bytes = file_size - index.data_start;
  uint64_t covered = 0;
  for (const TensorInfo& t : index.tensors) {
    if (t.begin != covered) {
      fail(source, fmt::format("tensor \"{}\": data_offsets start at {}, expected {} ({})", t.name,
                               t.begin, covered,
                               t.begin < covered ? "it overlaps the tensor before it"
                                                 : "a gap in the data"));
    }
    covered = t.end;
  }
  if (covered != data_bytes) {
    fail(source,
         fmt::format("{}: the tensors hold {} bytes, the data section has {}",
                     covered > data_bytes ? "truncated" : "trailing bytes", covered, data_bytes));
  }
  return index;
}

SafetensorsReader::SafetensorsReader(const std::string& path) : path_(path) {
  // Without blocking, so that a FIFO in the file's place is refused below, not waited on.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(path, "not a regular file");
  }
  size_ = static_cast<uint64_t>(st.st_size);
  if (size_ > 0) {
    void* map = ::mmap(nullptr, static_cast<size_t>(size_), PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      const int error = errno;
      ::close(fd);
      fail(path, std::string("cannot map: ") + std::strerror(error));
    }
    map_ = static_cast<const unsigned char*>(map);
  }
  ::close(fd);  // the mapping keeps the file
  try {
    const std::string_view bytes(reinterpret_cast<const char*>(map_), static_cast<size_t>(size_));
    index_ = parse_safetensors_index(bytes, size_, path);
  } catch (...) {
    if (map_ != nullptr) ::munmap(const_cast<unsigned char*>(map_), static_cast<size_t>(size_));
    throw;
  }
}

SafetensorsReader::~SafetensorsReader() {
  if (map_ != nullptr) ::munmap(const_cast<unsigned char*>(map_), static_cast<size_t>(size_));
}

const void* SafetensorsReader::tensor_data(const TensorInfo& tensor) const {
  // Ranges come from the validated index; a TensorInfo from elsewhere is checked here.
  if (tensor.end < tensor.begin || tensor.end > size_ - index_.data_start) {
    fail(path_, fmt::format("tensor \"{}\": bytes [{}, {}) lie outside the data section",
                            tensor.name, tensor.begin, tensor.end));
  }
  return map_ + index_.data_start + tensor.begin;
}

void SafetensorsReader::read_tensor(const TensorInfo& tensor, void* destination) const {
  const void* from = tensor_data(tensor);
  if (tensor.end > tensor.begin) std::memcpy(destination, from, tensor.end - tensor.begin);
}

SafetensorsWriter::SafetensorsWriter(std::string path, const std::vector<TensorLayout>& layout,
                                     const std::map<std::string, std::string>& metadata,
                                     std::string_view write_kind)
    : path_(std::move(path)), write_kind_(write_kind) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const TensorLayout& t : layout) {
    if (t.name.empty() || t.name == "__metadata__" || !names.insert(t.name).second) {
      fail(path_,
           fmt::format("cannot write tensor \"{}\": empty, reserved or duplicate name", t.name));
    }
    const int64_t element_bytes = safetensors_dtype_bytes(t.dtype);
    if (element_bytes == 0)
      fail(path_, fmt::format("tensor \"{}\": unknown dtype \"{}\"", t.name, t.dtype));
    uint64_t elements = 1;
    for (int64_t d : t.shape) elements *= static_cast<uint64_t>(d);
    const uint64_t bytes = elements * uint64_t(element_bytes);
    header[t.name] = {
        {"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    names_.push_back(t.name);
    sizes_.push_back(bytes);
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  file_bytes_ = 8 + text.size() + offset;

  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) fail(path_, std::string("cannot create: ") + std::strerror(errno));
  write_bytes(le64(text.size()).data(), 8);
  write_bytes(text.data(), text.size());
}

SafetensorsWriter::~SafetensorsWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void SafetensorsWriter::write_bytes(const void* data, uint64_t size) {
  if (!io::write_all(fd_, std::string_view(static_cast<const char*>(data), size), write_kind_)) {
    const int error = errno;
    ::close(fd_);
    fd_ = -1;
    fail(path_, std::string("cannot write: ") + std::strerror(error));
  }
}

void SafetensorsWriter::write_next(const void* data, uint64_t bytes) {
  if (fd_ < 0 || next_ >= sizes_.size()) {
    fail(path_, "write_next() called after the last tensor or after an error");
  }
  if (bytes != sizes_[next_]) {
    fail(path_, fmt::format("tensor \"{}\": {} bytes given, its header says {}", names_[next_],
                            bytes, sizes_[next_]));
  }
  write_bytes(data, bytes);
  ++next_;
}

void SafetensorsWriter::finish() {
  if (fd_ < 0) fail(path_, "finish() called after an error or twice");
  if (next_ != sizes_.size()) {
    fail(path_, fmt::format("finish() after {} of {} tensors", next_, sizes_.size()));
  }
  const int fd = fd_;
  fd_ = -1;
  if (::fsync(fd) != 0) {
    const int error = errno;
    ::close(fd);
    fail(path_, std::string("cannot write (fsync): ") + std::strerror(error));
  }
  if (::close(fd) != 0) fail(path_, std::string("cannot write (close): ") + std::strerror(errno));
}

void write_safetensors(const std::string& path, const std::vector<TensorToWrite>& tensors,
                       const std::map<std::string, std::string>& metadata,
                       std::string_view write_kind) {
  std::vector<TensorLayout> layout;
  layout.reserve(tensors.size());
  for (const TensorToWrite& t : tensors) layout.push_back({t.name, t.dtype, t.shape});
  SafetensorsWriter writer(path, layout, metadata, write_kind);
  for (const TensorToWrite& t : tensors) {
    uint64_t elements = 1;
    for (int64_t d : t.shape) elements *= static_cast<uint64_t>(d);
    writer.write_next(t.data, elements * uint64_t(safetensors_dtype_bytes(t.dtype)));
  }
  writer.finish();
}

}  // namespace ftbench::io
