#include "data/sentencepiece_model.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "data/tokenizer.h"
#include "util/text/messages.h"

namespace ftbench::data {
namespace {

[[noreturn]] void fail(const std::string& source, std::string_view what) {
  throw TokenizerError(fmt::format("SentencePiece model \"{}\": {}", source, what));
}

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

std::string_view wire_type_name(uint32_t wire_type) {
  switch (wire_type) {
    case kVarint:
      return "a varint";
    case kFixed64:
      return "a 64-bit value";
    case kLengthDelimited:
      return "a length-delimited value";
    case kFixed32:
      return "a 32-bit value";
    default:
      return "a group";
  }
}

// One field of a protobuf message: the value of a varint or fixed-width field (little-endian),
// the payload of a length-delimited one, and where the field starts in the file.
struct WireField {
  uint32_t number = 0;
  uint32_t wire_type = 0;
  uint64_t value = 0;
  std::string_view payload;
  size_t file_offset = 0;
};

// Reads the fields of one message strictly: anything SentencePiece's protobuf parser would not
// read the same way is an error naming `where` and the byte of the file.
class MessageReader {
 public:
  MessageReader(std::string_view bytes, size_t file_offset, const std::string& source,
                std::string where)
      : bytes_(bytes), file_offset_(file_offset), source_(source), where_(std::move(where)) {}

  // The next field, or nullopt at the end of the message.
  std::optional<WireField> next() {
    if (pos_ == bytes_.size()) return std::nullopt;
    WireField field;
    field.file_offset = file_offset_ + pos_;
    const uint64_t key = varint("a field key");
    field.number = static_cast<uint32_t>(key >> 3);
    field.wire_type = static_cast<uint32_t>(key & 7);
    if (key >> 3 == 0 || key >> 3 > 0x1FFFFFFF) {
      error(field.file_offset,
            fmt::format("expected a field number of 1 to 536870911, found {}", key >> 3));
    }
    switch (field.wire_type) {
      case kVarint:
        field.value = varint("a varint");
        break;
      case kFixed64:
      case kFixed32: {
        const size_t width = field.wire_type == kFixed64 ? 8 : 4;
        if (bytes_.size() - pos_ < width) {
          error(field.file_offset,
                fmt::format("field {}: expected {} bytes, found the end of the message after {}",
                            field.number, width, bytes_.size() - pos_));
        }
        for (size_t i = 0; i < width; ++i) {
          field.value |= uint64_t{static_cast<unsigned char>(bytes_[pos_ + i])} << (8 * i);
        }
        pos_ += width;
        break;
      }
      case kLengthDelimited: {
        const uint64_t length = varint("a length");
        if (length > bytes_.size() - pos_) {
          error(field.file_offset,
                fmt::format("field {}: expected {} bytes, found the end of the message after {}",
                            field.number, length, bytes_.size() - pos_));
        }
        field.payload = bytes_.substr(pos_, static_cast<size_t>(length));
        pos_ += static_cast<size_t>(length);
        break;
      }
      default:
        error(field.file_offset, fmt::format("field {}: expected wire type 0, 1, 2 or 5, found {}",
                                             field.number, field.wire_type));
    }
    return field;
  }

  // Throws unless `field` has the wire type its declaration gives it.
  void expect_wire_type(const WireField& field, uint32_t wire_type, std::string_view name) const {
    if (field.wire_type == wire_type) return;
    error(field.file_offset,
          fmt::format("{} (field {}): expected {}, found {}", name, field.number,
                      wire_type_name(wire_type), wire_type_name(field.wire_type)));
  }

  // Where the payload of `field` starts in the file.
  size_t payload_offset(const WireField& field) const {
    return file_offset_ + static_cast<size_t>(field.payload.data() - bytes_.data());
  }

  [[noreturn]] void error(size_t file_offset, std::string_view what) const {
    fail(source_, fmt::format("{} (byte {} of the file): {}", where_, file_offset, what));
  }

 private:
  uint64_t varint(std::string_view what) {
    const size_t start = pos_;
    uint64_t value = 0;
    for (int shift = 0; shift < 64 && pos_ < bytes_.size(); shift += 7) {
      const auto byte = static_cast<unsigned char>(bytes_[pos_++]);
      value |= uint64_t{byte & 0x7Fu} << shift;
      if ((byte & 0x80) == 0) return value;
    }
    error(file_offset_ + start,
          fmt::format("expected {} (a varint of at most 10 bytes), found {}", what,
                      pos_ == bytes_.size() ? "the end of the message" : "a longer one"));
  }

  std::string_view bytes_;
  size_t file_offset_;
  size_t pos_ = 0;
  const std::string& source_;
  std::string where_;
};

// ModelProto.SentencePiece.Type.
enum PieceType : uint64_t {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6
};

bool is_byte_piece_text(std::string_view text) {
  const auto upper_hex = [](char c) { return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'F'); };
  return text.size() == 6 && text.substr(0, 3) == "<0x" && upper_hex(text[3]) &&
         upper_hex(text[4]) && text[5] == '>';
}

// Checks one ModelProto.pieces entry; returns its type.
uint64_t check_piece(const MessageReader& parent, const WireField& entry, int64_t index,
                     const std::string& source) {
  const std::string where = fmt::format("pieces[{}]", index);
  MessageReader reader(entry.payload, parent.payload_offset(entry), source, where);
  std::string_view text;
  bool has_text = false;
  float score = 0;
  uint64_t type = kNormal;
  while (const std::optional<WireField> field = reader.next()) {
    if (field->number == 1) {
      reader.expect_wire_type(*field, kLengthDelimited, "piece");
      text = field->payload;
      has_text = true;
    } else if (field->number == 2) {
      reader.expect_wire_type(*field, kFixed32, "score");
      const auto bits = static_cast<uint32_t>(field->value);
      std::memcpy(&score, &bits, sizeof(score));
    } else if (field->number == 3) {
      reader.expect_wire_type(*field, kVarint, "type");
      type = field->value;
    }
  }
  const size_t at = parent.payload_offset(entry);
  if (!has_text || text.empty()) {
    reader.error(at, "expected the piece's text, found " + std::string(has_text ? "\"\"" : "none"));
  }
  if (!std::isfinite(score)) {
    reader.error(at, fmt::format("expected a finite score, found {}", score));
  }
  if (type < kNormal || type > kByte) {
    reader.error(at, fmt::format("type: expected 1 to 6 (normal, unknown, control, "
                                 "user-defined, unused, byte), found {}",
                                 type));
  }
  if (type == kByte && !is_byte_piece_text(text)) {
    reader.error(at, "a byte piece: expected its text as \"<0x4A>\", found " + text::quoted(text));
  }
  return type;
}

// What ModelProto.trainer_spec says, over all its occurrences (protobuf merges them).
struct TrainerFacts {
  bool present = false;
  int64_t model_type = 1;
  // unk_id, bos_id, eos_id, pad_id: each value given, in order.
  std::vector<std::pair<std::string_view, int64_t>> special_ids;
};

void read_trainer_spec(const MessageReader& parent, const WireField& spec, TrainerFacts& facts,
                       const std::string& source) {
  facts.present = true;
  MessageReader reader(spec.payload, parent.payload_offset(spec), source, "trainer_spec");
  while (const std::optional<WireField> field = reader.next()) {
    switch (field->number) {
      case 3: {
        reader.expect_wire_type(*field, kVarint, "model_type");
        const auto type = static_cast<int32_t>(field->value);  // an enum is an int32
        if (type < 1 || type > 4) {
          reader.error(field->file_offset,
                       fmt::format("model_type: expected 1 to 4 (unigram, BPE, word, char), "
                                   "found {}",
                                   type));
        }
        facts.model_type = type;
        break;
      }
      case 40:
      case 41:
      case 42:
      case 43: {
        static constexpr std::string_view kNames[] = {"unk_id", "bos_id", "eos_id", "pad_id"};
        const std::string_view name = kNames[field->number - 40];
        reader.expect_wire_type(*field, kVarint, name);
        facts.special_ids.emplace_back(name, static_cast<int32_t>(field->value));
        break;
      }
      default:
        break;
    }
  }
}

// Checks a NormalizerSpec (normalizer_spec or denormalizer_spec); returns its trie's units.
int64_t check_normalizer_spec(const MessageReader& parent, const WireField& spec,
                              std::string_view name, const std::string& source) {
  MessageReader reader(spec.payload, parent.payload_offset(spec), source, std::string(name));
  int64_t units = 0;
  while (const std::optional<WireField> field = reader.next()) {
    if (field->number != 2) continue;
    reader.expect_wire_type(*field, kLengthDelimited, "precompiled_charsmap");
    units = check_precompiled_charsmap(field->payload, source,
                                       std::string(name) + ".precompiled_charsmap");
  }
  return units;
}

// A darts-clone double-array unit (darts.h, DoubleArrayUnit): bits 0-7 the label, bit 8 "has a
// leaf", bit 9 whether the offset is shifted by 8, bits 10-31 the offset; a leaf unit has bit
// 31 set (so no byte equals its label) and its value in bits 0-30.
struct TrieUnit {
  uint32_t bits;
  bool has_leaf() const { return ((bits >> 8) & 1) != 0; }
  uint32_t label() const { return bits & (0x80000000u | 0xFFu); }
  uint32_t value() const { return bits & 0x7FFFFFFFu; }
  uint64_t offset() const { return uint64_t{bits >> 10} << ((bits & (1u << 9)) >> 6); }
};

// The normalizer keeps this many matches of one lookup (normalizer.h, kMaxTrieResultsSize).
constexpr int kMaxLeavesOnAPath = 32;

class CharsmapChecker {
 public:
  CharsmapChecker(std::string_view trie, std::string_view strings, const std::string& source,
                  std::string_view field)
      : trie_(trie),
        strings_(strings),
        last_nul_(strings.rfind('\0')),
        units_(trie.size() / 4),
        source_(source),
        field_(field),
        state_(units_, kUnseen),
        leaves_below_(units_, 0) {}

  void check() {
    if (units_ == 0) {
      error(
          fmt::format("the trie: expected at least one 4-byte unit, found {} bytes", trie_.size()));
    }
    push(0);
    while (!stack_.empty()) {
      Frame& frame = stack_.back();
      if (frame.next_byte > 0xFF) {
        finish(frame);
        continue;
      }
      const uint32_t byte = frame.next_byte++;
      const uint64_t child = frame.children ^ byte;
      if (unit(child).label() != byte) continue;
      if (state_[child] == kOnPath) {
        error(
            fmt::format("trie unit {}{}: expected a trie, found a path back to unit {} by byte "
                        "{:02X}",
                        frame.node, reached_by(stack_.size() - 1), child, byte));
      }
      if (state_[child] == kUnseen) {
        push(child);
      } else {
        frame.most_leaves_below = std::max(frame.most_leaves_below, leaves_below_[child]);
      }
    }
  }

  int64_t units() const { return static_cast<int64_t>(units_); }

 private:
  enum State : uint8_t { kUnseen, kOnPath, kDone };
  struct Frame {
    uint64_t node;
    uint64_t children;  // the first unit of its children's block: node ^ offset
    uint32_t next_byte = 0;
    uint8_t most_leaves_below = 0;
  };

  TrieUnit unit(uint64_t index) const {
    uint32_t bits = 0;
    std::memcpy(&bits, trie_.data() + 4 * index, sizeof(bits));  // little-endian, as written
    return {bits};
  }

  // Checks the node at `index` (unit 0 is the root) and puts it on the path.
  void push(uint64_t index) {
    const TrieUnit node = unit(index);
    const uint64_t children = index ^ node.offset();
    if ((children | 0xFF) >= units_) {
      error(fmt::format(
          "trie unit {}{}: expected its children's units {} to {} inside the "
          "trie, found a trie of {} units",
          index, reached_by(stack_.size()), children & ~uint64_t{0xFF}, children | 0xFF, units_));
    }
    // The root's leaf is never read: a lookup reads a leaf after a byte.
    if (index != 0 && node.has_leaf()) {
      const uint32_t value = unit(children).value();
      if (value >= strings_.size()) {
        error(
            fmt::format("trie unit {}{}: expected its leaf to point into the {} bytes of "
                        "replacement strings, found offset {}",
                        index, reached_by(stack_.size()), strings_.size(), value));
      }
      if (last_nul_ == std::string_view::npos || value > last_nul_) {
        error(
            fmt::format("trie unit {}{}: expected a NUL byte at or after offset {} of the {} "
                        "bytes of replacement strings, found none",
                        index, reached_by(stack_.size()), value, strings_.size()));
      }
    }
    state_[index] = kOnPath;
    stack_.push_back({index, children});
  }

  void finish(const Frame& frame) {
    const bool leaf = frame.node != 0 && unit(frame.node).has_leaf();
    const int leaves = frame.most_leaves_below + (leaf ? 1 : 0);
    if (leaves > kMaxLeavesOnAPath) {
      error(
          fmt::format("trie unit {}{}: expected at most {} leaves on a path through it, found "
                      "{}",
                      frame.node, reached_by(stack_.size() - 1), kMaxLeavesOnAPath, leaves));
    }
    state_[frame.node] = kDone;
    leaves_below_[frame.node] = static_cast<uint8_t>(leaves);
    const uint64_t node = frame.node;
    stack_.pop_back();
    if (!stack_.empty()) {
      Frame& parent = stack_.back();
      parent.most_leaves_below = std::max(parent.most_leaves_below, leaves_below_[node]);
    }
  }

  // " (reached by the bytes E3 80)": the bytes a lookup follows from the root through the first
  // `depth` nodes of the path.
  std::string reached_by(size_t depth) const {
    if (depth == 0) return " (the root)";
    std::string out = " (reached by the bytes";
    for (size_t i = 0; i < depth; ++i) out += fmt::format(" {:02X}", stack_[i].next_byte - 1);
    return out + ")";
  }

  [[noreturn]] void error(std::string_view what) const {
    fail(source_, fmt::format("{}: {}", field_, what));
  }

  std::string_view trie_;
  std::string_view strings_;
  size_t last_nul_;  // in strings_, or npos
  uint64_t units_;
  const std::string& source_;
  std::string_view field_;
  std::vector<uint8_t> state_;
  std::vector<uint8_t> leaves_below_;
  std::vector<Frame> stack_;
};

}  // namespace

int64_t check_precompiled_charsmap(std::string_view charsmap, const std::string& source,
                                   std::string_view field) {
  if (charsmap.empty()) return 0;
  const auto error = [&](std::string_view what) {
    fail(source, fmt::format("{}: {}", field, what));
  };
  if (charsmap.size() <= 4) {
    error(fmt::format("expected a 4-byte trie size and the trie, found {} bytes", charsmap.size()));
  }
  uint32_t trie_bytes = 0;
  for (size_t i = 0; i < 4; ++i) {
    trie_bytes |= uint32_t{static_cast<unsigned char>(charsmap[i])} << (8 * i);
  }
  if (trie_bytes > charsmap.size() - 4) {
    error(fmt::format("expected a trie of at most the {} bytes after its size, found a size of {}",
                      charsmap.size() - 4, trie_bytes));
  }
  if (trie_bytes > kMaxCharsmapTrieBytes) {
    error(fmt::format("expected a trie of at most {} bytes, found {}", kMaxCharsmapTrieBytes,
                      trie_bytes));
  }
  CharsmapChecker checker(charsmap.substr(4, trie_bytes), charsmap.substr(4 + trie_bytes), source,
                          field);
  checker.check();
  return checker.units();
}

SentencePieceModelInfo check_sentencepiece_model(std::string_view serialized_model,
                                                 const std::string& source) {
  SentencePieceModelInfo info;
  MessageReader reader(serialized_model, 0, source, "ModelProto");
  TrainerFacts trainer;
  bool has_normalizer_spec = false;
  int64_t unknown_pieces = 0;
  while (const std::optional<WireField> field = reader.next()) {
    switch (field->number) {
      case 1:
        reader.expect_wire_type(*field, kLengthDelimited, "pieces");
        if (check_piece(reader, *field, info.pieces, source) == kUnknown) ++unknown_pieces;
        ++info.pieces;
        break;
      case 2:
        reader.expect_wire_type(*field, kLengthDelimited, "trainer_spec");
        read_trainer_spec(reader, *field, trainer, source);
        break;
      case 3:
        reader.expect_wire_type(*field, kLengthDelimited, "normalizer_spec");
        has_normalizer_spec = true;
        info.normalizer_trie_units =
            check_normalizer_spec(reader, *field, "normalizer_spec", source);
        break;
      case 5:
        reader.expect_wire_type(*field, kLengthDelimited, "denormalizer_spec");
        info.denormalizer_trie_units =
            check_normalizer_spec(reader, *field, "denormalizer_spec", source);
        break;
      default:
        break;
    }
  }
  if (info.pieces == 0) fail(source, "expected pieces, found none");
  if (info.pieces > INT32_MAX) {
    fail(source, fmt::format("expected at most {} pieces, found {}", INT32_MAX, info.pieces));
  }
  if (unknown_pieces != 1) {
    fail(source, fmt::format("expected one piece of type unknown (2), found {}", unknown_pieces));
  }
  // SentencePiece's trainer writes both after the pieces: a model without them was cut off
  // between two fields, and would load with default normalization.
  if (!trainer.present || !has_normalizer_spec) {
    fail(source, fmt::format("no {} after the {} pieces: the file looks truncated",
                             trainer.present ? "normalizer_spec" : "trainer_spec", info.pieces));
  }
  info.model_type = trainer.model_type;
  for (const auto& [name, id] : trainer.special_ids) {
    if (id < -1 || id >= info.pieces) {
      fail(source, fmt::format("trainer_spec.{}: expected -1 (none) or a piece's id, 0 to {}, "
                               "found {}",
                               name, info.pieces - 1, id));
    }
  }
  return info;
}

}  // namespace ftbench::data
