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

#include "data/tokenizer.h"

#include <algorithm>
#include <array>
#include <cfloat>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
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

// Calls `on_field(number, wire_type, value, payload)` for each field of the serialized protobuf
// message `bytes` (varint and fixed-width fields: value, little-endian for the fixed ones;
// length-delimited ones: payload). Stops at anything it cannot read: the bytes came from a model
// that data::check_sentencepiece_model accepted and SentencePiece then parsed.
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
      case 1:    // 64-bit
      case 5: {  // 32-bit
        const size_t width = wire_type == 1 ? 8 : 4;
        if (bytes.size() - pos < width) return;
        for (size_t i = 0; i < width; ++i) {
          value |= static_cast<uint64_t>(static_cast<unsigned char>(bytes[pos + i])) << (8 * i);
        }
        pos += width;
        break;
      }
      case 2: {  // length-delimited
        const std::optional<uint64_t> length = read_varint(bytes, pos);
        if (!length || *length > bytes.size() - pos) return;
        payload = bytes.substr(pos, static_cast<size_t>(*length));
        pos += static_cast<size_t>(*length);
        break;
      }
      default:  // groups (unused by sentencepiece_model.proto) or garbage
        return;
    }
    on_field(number, wire_type, value, payload);
  }
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

// ModelProto.SentencePiece.Type.
enum PieceType : uint8_t {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6
};

// Unigram segmentation as SentencePiece 0.2.2 and later do it (unigram_model.cc
// Model::EncodeOptimized, then the ids of SentencePieceProcessor::EncodeOptimized), instead of
// the system library's Viterbi. Releases before 0.2.2 (Debian 12 ships 0.1.97) add a piece's
// score to the path's in double and compare that with the float they stored, so of two paths
// whose float scores are equal ("4" "444" against "444" "4": the same pieces in another order)
// the later one wins by a rounding error; 0.2.2 adds in float and keeps the first. It also
// shifts the scores back to 0 once they pass +-1e5, to keep float precision on long texts, and
// scores a user-defined symbol 0.1 x (bytes - 1) (before: about -0.1, whatever its length).
// The ids follow PyPI's current sentencepiece (0.2.3 in python/requirements.txt), the one the
// Hugging Face stack uses; tests/conformance compares them. The normalized text still comes
// from the library. Thread-safe: const after construction.
class UnigramSegmenter {
 public:
  // From a serialized ModelProto the library has loaded (so well-formed).
  explicit UnigramSegmenter(std::string_view serialized_model);
  // Ids of `normalized` (the normalizer's output): an unknown character as its byte pieces
  // under byte fallback, else one unknown id per run of unknown characters.
  std::vector<int32_t> encode(std::string_view normalized) const;

 private:
  // The best path ending at a byte position: its score, last piece and where that starts.
  struct BestPath {
    float score = 0;
    int32_t id = -1;
    int64_t starts_at = -1;
  };
  // Edges of the trie while it is built, keyed by node << 8 | byte.
  using EdgeMap = std::unordered_map<uint64_t, int32_t>;
  void add_to_trie(const std::string& piece, int32_t id, EdgeMap& edges);
  void set_edges(const EdgeMap& edges);
  // The node reached from `node` by `byte`, or -1.
  int32_t child(int32_t node, unsigned char byte) const {
    const auto first = edge_byte_.begin() + edge_begin_[node];
    const auto last = edge_byte_.begin() + edge_begin_[node + 1];
    const auto it = std::lower_bound(first, last, byte);
    return it != last && *it == byte ? edge_child_[it - edge_byte_.begin()] : -1;
  }

  std::vector<float> scores_;
  std::vector<uint8_t> types_;
  // The trie of normal, user-defined and unused pieces (those the library matches): node n's
  // edges are edge_byte_ / edge_child_ [edge_begin_[n], edge_begin_[n + 1]), in byte order;
  // node_piece_ is the piece id ending at each node, or -1. Node 0 is the root.
  std::vector<uint32_t> edge_begin_;
  std::vector<unsigned char> edge_byte_;
  std::vector<int32_t> edge_child_;
  std::vector<int32_t> node_piece_ = {-1};
  std::array<int32_t, 256> byte_ids_{};
  int32_t unk_id_ = -1;
  bool byte_fallback_ = false;
  float min_score_ = FLT_MAX;  // of the normal pieces; an unknown character costs 10 below it
};

// One ModelProto.pieces entry: piece 1, score 2 (float), type 3 (default normal).
struct PieceEntry {
  std::string text;
  float score = 0;
  uint8_t type = kNormal;
};

PieceEntry read_piece(std::string_view message) {
  PieceEntry entry;
  const auto on_field = [&](uint32_t number, uint32_t wire_type, uint64_t value,
                            std::string_view payload) {
    if (number == 1 && wire_type == 2) entry.text = std::string(payload);
    if (number == 2 && wire_type == 5) {
      const auto bits = static_cast<uint32_t>(value);
      std::memcpy(&entry.score, &bits, sizeof(entry.score));
    }
    if (number == 3 && wire_type == 0) entry.type = static_cast<uint8_t>(value);
  };
  for_each_field(message, on_field);
  return entry;
}

// Bytes of the UTF-8 character led by `lead`, as SentencePiece's OneCharLen counts them (1 for
// a stray continuation byte).
size_t utf8_char_bytes(unsigned char lead) {
  constexpr std::array<uint8_t, 16> kBytesByHighNibble = {1, 1, 1, 1, 1, 1, 1, 1,
                                                          1, 1, 1, 1, 2, 2, 3, 4};
  return kBytesByHighNibble[lead >> 4];
}

UnigramSegmenter::UnigramSegmenter(std::string_view serialized_model) {
  std::vector<std::string> pieces;
  const auto on_field = [&](uint32_t number, uint32_t wire_type, uint64_t,
                            std::string_view payload) {
    if (wire_type != 2) return;
    if (number == 1) {  // pieces
      PieceEntry entry = read_piece(payload);
      pieces.push_back(std::move(entry.text));
      scores_.push_back(entry.score);
      types_.push_back(entry.type);
    } else if (number == 2) {  // trainer_spec: byte_fallback is field 35
      const auto on_trainer_field = [&](uint32_t inner, uint32_t inner_wire_type, uint64_t value,
                                        std::string_view) {
        if (inner == 35 && inner_wire_type == 0) byte_fallback_ = value != 0;
      };
      for_each_field(payload, on_trainer_field);
    }
  };
  for_each_field(serialized_model, on_field);
  byte_ids_.fill(-1);
  EdgeMap edges;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const auto id = static_cast<int32_t>(i);
    switch (types_[i]) {
      case kNormal:
        min_score_ = std::min(min_score_, scores_[i]);
        add_to_trie(pieces[i], id, edges);
        break;
      case kUserDefined:
      case kUnused:
        add_to_trie(pieces[i], id, edges);
        break;
      case kUnknown:
        if (unk_id_ < 0) unk_id_ = id;
        break;
      case kByte:  // "<0x4A>"
        if (pieces[i].size() == 6) {
          byte_ids_[std::stoul(pieces[i].substr(3, 2), nullptr, 16) & 0xFF] = id;
        }
        break;
      default:
        break;
    }
  }
  for (int32_t& id : byte_ids_) {
    if (id < 0) id = unk_id_;  // as the library's PieceToId answers for a missing piece
  }
  set_edges(edges);
}

void UnigramSegmenter::add_to_trie(const std::string& piece, int32_t id, EdgeMap& edges) {
  int32_t node = 0;
  for (const char c : piece) {
    const uint64_t key = static_cast<uint64_t>(node) << 8 | static_cast<unsigned char>(c);
    const auto [it, added] = edges.try_emplace(key, static_cast<int32_t>(node_piece_.size()));
    if (added) node_piece_.push_back(-1);
    node = it->second;
  }
  if (node_piece_[node] < 0) node_piece_[node] = id;
}

void UnigramSegmenter::set_edges(const EdgeMap& edges) {
  std::vector<std::pair<uint64_t, int32_t>> sorted(edges.begin(), edges.end());
  std::sort(sorted.begin(), sorted.end());  // by node, then byte
  edge_begin_.assign(node_piece_.size() + 1, 0);
  for (const auto& [key, child] : sorted) {
    ++edge_begin_[(key >> 8) + 1];
    edge_byte_.push_back(static_cast<unsigned char>(key & 0xFF));
    edge_child_.push_back(child);
  }
  for (size_t n = 1; n < edge_begin_.size(); ++n) edge_begin_[n] += edge_begin_[n - 1];
}

std::vector<int32_t> UnigramSegmenter::encode(std::string_view normalized) const {
  const size_t size = normalized.size();
  if (size == 0) return {};
  constexpr float kUnknownPenalty = 10.0F;
  constexpr float kScoreResetThreshold = 100000.0F;
  const float unknown_score = min_score_ - kUnknownPenalty;
  std::vector<BestPath> best(size + 1);
  const auto relax = [&](size_t end, float score, int32_t id, size_t starts_at) {
    BestPath& target = best[end];
    if (target.starts_at == -1 || score > target.score) {
      target = {score, id, static_cast<int64_t>(starts_at)};
    }
  };
  size_t max_frontier = 0;  // the furthest position a path has reached
  for (size_t starts_at = 0; starts_at < size;) {
    float score_here = best[starts_at].score;
    if (score_here < -kScoreResetThreshold || score_here > kScoreResetThreshold) {
      for (size_t i = starts_at; i <= max_frontier; ++i) {
        if (i == starts_at || best[i].starts_at != -1) best[i].score -= score_here;
      }
      score_here = 0.0F;
    }
    const size_t char_bytes = std::min(
        utf8_char_bytes(static_cast<unsigned char>(normalized[starts_at])), size - starts_at);
    bool has_single_character = false;
    int32_t node = 0;
    for (size_t end = starts_at; end < size;) {
      node = child(node, static_cast<unsigned char>(normalized[end]));
      if (node < 0) break;
      ++end;
      const int32_t id = node_piece_[node];
      if (id < 0 || types_[id] == kUnused) continue;
      max_frontier = std::max(max_frontier, end);
      const size_t length = end - starts_at;
      const float score = types_[id] == kUserDefined
                              ? static_cast<float>(0.1 * (static_cast<double>(length) - 1))
                              : scores_[id];
      relax(end, score + score_here, id, starts_at);
      if (length == char_bytes) has_single_character = true;
    }
    if (!has_single_character) {
      max_frontier = std::max(max_frontier, starts_at + char_bytes);
      relax(starts_at + char_bytes, unknown_score + score_here, unk_id_, starts_at);
    }
    starts_at += char_bytes;
  }

  std::vector<size_t> ends;  // of the best path's pieces, last first
  for (size_t end = size; end > 0; end = static_cast<size_t>(best[end].starts_at)) {
    ends.push_back(end);
  }
  std::vector<int32_t> ids;
  ids.reserve(ends.size());
  bool previous_unknown = false;
  for (auto it = ends.rbegin(); it != ends.rend(); ++it) {
    const BestPath& piece = best[*it];
    const bool unknown = piece.id == unk_id_ || (piece.id >= 0 && types_[piece.id] == kUnknown);
    if (unknown && byte_fallback_) {
      for (size_t i = static_cast<size_t>(piece.starts_at); i < *it; ++i) {
        ids.push_back(byte_ids_[static_cast<unsigned char>(normalized[i])]);
      }
    } else if (!previous_unknown || !unknown) {
      ids.push_back(piece.id);
    }
    previous_unknown = unknown;
  }
  return ids;
}

// The normalizer's output for `text`, put back together from the library's own segmentation
// (the pieces of a segmentation cover the normalized text, an unknown run as its text, a byte
// piece as its byte): the library installed has no public Normalize().
std::string normalized_text(const sentencepiece::SentencePieceProcessor& processor,
                            std::string_view text, const std::string& path) {
  sentencepiece::ImmutableSentencePieceText spt;
  const sentencepiece::util::Status status = processor.Encode(text, spt.mutable_proto());
  if (!status.ok()) {
    throw TokenizerError("SentencePiece model \"" + path +
                         "\": encode failed: " + status.ToString());
  }
  std::string normalized;
  normalized.reserve(text.size() + text.size() / 4 + 4);
  for (size_t i = 0; i < spt.pieces_size(); ++i) {
    const auto piece = spt.pieces(static_cast<int>(i));
    if (processor.IsByte(static_cast<int>(piece.id()))) {  // "<0x4A>"
      normalized.push_back(static_cast<char>(std::stoul(piece.piece().substr(3, 2), nullptr, 16)));
    } else {
      normalized += piece.piece();
    }
  }
  return normalized;
}

class SpmBackend final : public Tokenizer {
 public:
  // `serialized_model`: the bytes of the file `path`, accepted by check_sentencepiece_model,
  // whose `model_type` the checks read.
  static std::unique_ptr<SpmBackend> from_serialized(const std::string& path,
                                                     std::string_view serialized_model,
                                                     uint64_t model_type);
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
    std::optional<UnigramSegmenter> unigram;  // for unigram models
  };
  explicit SpmBackend(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
  std::unique_ptr<Impl> impl_;
};

std::unique_ptr<SpmBackend> SpmBackend::from_serialized(const std::string& path,
                                                        std::string_view serialized_model,
                                                        uint64_t model_type) {
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  const sentencepiece::util::Status status =
      impl->processor.LoadFromSerializedProto(serialized_model);
  if (!status.ok()) {
    throw TokenizerError(
        "SentencePiece model \"" + path +
        "\": cannot be loaded (not a valid SentencePiece .model file): " + status.ToString());
  }
  impl->name = "SentencePiece " + model_type_name(model_type) + " (" +
               std::to_string(impl->processor.GetPieceSize()) + " pieces)";
  if (model_type == 1) impl->unigram.emplace(serialized_model);
  return std::unique_ptr<SpmBackend>(new SpmBackend(std::move(impl)));
}

std::string SpmBackend::name() const { return impl_->name; }

std::vector<int32_t> SpmBackend::encode(std::string_view text) const {
  if (impl_->unigram) {
    return impl_->unigram->encode(normalized_text(impl_->processor, text, impl_->path));
  }
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

// The module's one entry point: a tokenizer for the `model_size` bytes at `model` (the file
// `path`, checked by data::check_sentencepiece_model, which read its `model_type`) that the
// caller owns (delete through Tokenizer's virtual destructor), or nullptr with the reason in
// `error` (no exception crosses the module boundary).
extern "C" __attribute__((visibility("default"))) ftbench::data::Tokenizer*
ftbench_spm_load_checked(const char* path, const char* model, std::size_t model_size,
                         std::uint64_t model_type, char* error, std::size_t error_size) {
  try {
    return ftbench::data::SpmBackend::from_serialized(path, std::string_view(model, model_size),
                                                      model_type)
        .release();
  } catch (const std::exception& e) {
    std::snprintf(error, error_size, "%s", e.what());
  }
  return nullptr;
}
