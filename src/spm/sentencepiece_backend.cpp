// The SentencePiece tokenizer proper, built as its own module (libftbench_spm.so) that
// data/sentencepiece_tokenizer.cpp loads with dlopen(RTLD_LOCAL | RTLD_DEEPBIND).
//
// Why a separate module: Debian's libsentencepiece carries its own copy of protobuf-lite and
// exports it; LibTorch loads libprotobuf.so. Linked into one program, protobuf's static
// initialisers bind to SentencePiece's copy and crash before main(). Loaded locally, with its
// own symbols first, SentencePiece keeps to its copy and LibTorch to its own.
#include <sentencepiece_processor.h>

#include <cstdio>
#include <exception>
#include <memory>

#include "ftbench/data/tokenizer.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ftbench::data {
namespace {

// Reads one base-128 varint at `pos` of `bytes`; nullopt when the bytes end inside it.
std::optional<uint64_t> read_varint(std::string_view bytes, size_t& pos) {
  uint64_t value = 0;
  for (int shift = 0; shift < 64 && pos < bytes.size(); shift += 7) {
    const auto byte = static_cast<unsigned char>(bytes[pos++]);
    value |= static_cast<uint64_t>(byte & 0x7F) << shift;
    if ((byte & 0x80) == 0) return value;
  }
  return std::nullopt;
}

// Calls `on_field(number, wire_type, varint_value, payload)` for each field of the serialized
// protobuf message `bytes` (varint fields: value; length-delimited ones: payload). Stops at
// anything it cannot read: the bytes came from a model SentencePiece has already parsed.
template <typename OnField>
void for_each_field(std::string_view bytes, OnField&& on_field) {
  size_t pos = 0;
  while (pos < bytes.size()) {
    const std::optional<uint64_t> key = read_varint(bytes, pos);
    if (!key) return;
    const auto number = static_cast<uint32_t>(*key >> 3);
    const auto wire_type = static_cast<uint32_t>(*key & 7);
    uint64_t value = 0;
    std::string_view payload;
    switch (wire_type) {
      case 0: {  // varint
        const std::optional<uint64_t> v = read_varint(bytes, pos);
        if (!v) return;
        value = *v;
        break;
      }
      case 1:  // 64-bit
        if (bytes.size() - pos < 8) return;
        pos += 8;
        break;
      case 2: {  // length-delimited
        const std::optional<uint64_t> length = read_varint(bytes, pos);
        if (!length || *length > bytes.size() - pos) return;
        payload = bytes.substr(pos, static_cast<size_t>(*length));
        pos += static_cast<size_t>(*length);
        break;
      }
      case 5:  // 32-bit
        if (bytes.size() - pos < 4) return;
        pos += 4;
        break;
      default:  // groups (unused by sentencepiece_model.proto) or garbage
        return;
    }
    on_field(number, wire_type, value, payload);
  }
}

// What from_file() needs of a serialized ModelProto (sentencepiece_model.proto: ModelProto field
// 2 is trainer_spec, 3 normalizer_spec; TrainerSpec field 3 is model_type, default UNIGRAM).
// Debian ships no generated sentencepiece_model.pb.h, so these fields are read off the wire.
struct ModelSummary {
  bool has_trainer_spec = false;
  bool has_normalizer_spec = false;
  uint64_t model_type = 1;  // UNIGRAM
};

ModelSummary summarize(std::string_view serialized_model) {
  ModelSummary summary;
  for_each_field(serialized_model,
                 [&](uint32_t number, uint32_t wire_type, uint64_t, std::string_view payload) {
                   if (wire_type != 2) return;
                   if (number == 3) summary.has_normalizer_spec = true;
                   if (number != 2) return;
                   summary.has_trainer_spec = true;
                   for_each_field(payload, [&](uint32_t inner, uint32_t inner_wire_type,
                                               uint64_t value, std::string_view) {
                     if (inner == 3 && inner_wire_type == 0) summary.model_type = value;
                   });
                 });
  return summary;
}

std::string model_type_name(uint64_t model_type) {
  switch (model_type) {
    case 1:
      return "Unigram";
    case 2:
      return "BPE";
    case 3:
      return "Word";
    case 4:
      return "Char";
    default:
      return "model type " + std::to_string(model_type);
  }
}

class SpmBackend final : public Tokenizer {
 public:
  static std::unique_ptr<SpmBackend> from_file(const std::string& path);
  std::string name() const override;
  std::vector<int32_t> encode(std::string_view text) const override;
  std::string decode(const std::vector<int32_t>& ids) const override;
  int64_t vocab_size() const override;
  int32_t bos_id() const override;
  int32_t eos_id() const override;
  int32_t pad_id() const override;
  std::optional<int32_t> token_id(std::string_view token) const override;

 private:
  struct Impl {
    std::string path;
    sentencepiece::SentencePieceProcessor processor;
    std::string name;
  };
  explicit SpmBackend(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::unique_ptr<Impl> impl_;
};

std::unique_ptr<SpmBackend> SpmBackend::from_file(const std::string& path) {
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  const sentencepiece::util::Status status = impl->processor.Load(path);
  if (!status.ok()) {
    throw TokenizerError(
        "SentencePiece model \"" + path +
        "\": cannot be loaded (not a readable SentencePiece .model file): " + status.ToString());
  }
  // A file cut off between two fields parses as a shorter model; SentencePiece's trainer always
  // writes trainer_spec and normalizer_spec after the pieces, so a model without them is taken
  // for truncated (without them it would load with default normalization).
  const ModelSummary summary = summarize(impl->processor.serialized_model_proto());
  if (!summary.has_trainer_spec || !summary.has_normalizer_spec) {
    throw TokenizerError("SentencePiece model \"" + path + "\": no " +
                         (summary.has_trainer_spec ? "normalizer_spec" : "trainer_spec") +
                         " after the " + std::to_string(impl->processor.GetPieceSize()) +
                         " pieces: the file looks truncated");
  }
  impl->name = "SentencePiece " + model_type_name(summary.model_type) + " (" +
               std::to_string(impl->processor.GetPieceSize()) + " pieces)";
  return std::unique_ptr<SpmBackend>(new SpmBackend(std::move(impl)));
}

std::string SpmBackend::name() const { return impl_->name; }

std::vector<int32_t> SpmBackend::encode(std::string_view text) const {
  std::vector<int> ids;
  const sentencepiece::util::Status status = impl_->processor.Encode(text, &ids);
  if (!status.ok()) {
    throw TokenizerError("SentencePiece model \"" + impl_->path +
                         "\": encode failed: " + status.ToString());
  }
  return std::vector<int32_t>(ids.begin(), ids.end());
}

std::string SpmBackend::decode(const std::vector<int32_t>& ids) const {
  // Ids outside the vocabulary decode to nothing, as ByteTokenizer's do (SentencePiece itself
  // would fail the whole call, and DecodeIds() would then return an empty string); control
  // symbols (<s>, </s>) decode to nothing, as SentencePiece decodes them.
  const int32_t size = impl_->processor.GetPieceSize();
  std::vector<int> valid;
  valid.reserve(ids.size());
  for (const int32_t id : ids) {
    if (id >= 0 && id < size) valid.push_back(id);
  }
  std::string text;
  const sentencepiece::util::Status status = impl_->processor.Decode(valid, &text);
  if (!status.ok()) {
    throw TokenizerError("SentencePiece model \"" + impl_->path +
                         "\": decode failed: " + status.ToString());
  }
  return text;
}

int64_t SpmBackend::vocab_size() const { return impl_->processor.GetPieceSize(); }

int32_t SpmBackend::bos_id() const { return impl_->processor.bos_id(); }

int32_t SpmBackend::eos_id() const { return impl_->processor.eos_id(); }

int32_t SpmBackend::pad_id() const {
  const int pad = impl_->processor.pad_id();
  return pad >= 0 ? pad : impl_->processor.unk_id();
}

std::optional<int32_t> SpmBackend::token_id(std::string_view token) const {
  const sentencepiece::SentencePieceProcessor& sp = impl_->processor;
  const int id = sp.PieceToId(token);
  // PieceToId answers unk_id for pieces it does not know.
  if (id == sp.unk_id() && token != sp.IdToPiece(id)) return std::nullopt;
  return id;
}

}  // namespace
}  // namespace ftbench::data

// The module's one entry point: a tokenizer the caller owns (delete through Tokenizer's virtual
// destructor), or nullptr with the reason in `error` (no exception crosses the module boundary).
extern "C" __attribute__((visibility("default"))) ftbench::data::Tokenizer* ftbench_spm_load(
    const char* path, char* error, std::size_t error_size) {
  try {
    return ftbench::data::SpmBackend::from_file(path).release();
  } catch (const std::exception& e) {
    std::snprintf(error, error_size, "%s", e.what());
  }
  return nullptr;
}
