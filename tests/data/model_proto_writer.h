// Protobuf wire format, enough to write a SentencePiece ModelProto by hand
// (sentencepiece_model.proto; src/data/sentencepiece_model.h lists the fields), and
// the darts-clone units of a precompiled_charsmap's trie. For the SentencePiece tests.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace ftbench::data::test {

inline std::string varint(uint64_t value) {
  std::string out;
  for (; value >= 0x80; value >>= 7) out.push_back(static_cast<char>((value & 0x7F) | 0x80));
  out.push_back(static_cast<char>(value));
  return out;
}
inline std::string varint_field(uint32_t number, uint64_t value) {
  return varint(number << 3) + varint(value);
}
inline std::string bytes_field(uint32_t number, const std::string& payload) {
  return varint(number << 3 | 2) + varint(payload.size()) + payload;
}
inline std::string fixed32(uint32_t bits) {
  std::string out;
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((bits >> (8 * i)) & 0xFF));
  return out;
}
inline std::string float_field(uint32_t number, float value) {
  uint32_t bits = 0;
  std::memcpy(&bits, &value, sizeof(bits));
  return varint(number << 3 | 5) + fixed32(bits);
}
// ModelProto.pieces: piece 1, score 2, type 3 (1 normal, 2 unknown, 3 control, 4 user-defined,
// 5 unused, 6 byte).
inline std::string piece_field(const std::string& piece, float score, int type) {
  return bytes_field(1, bytes_field(1, piece) + float_field(2, score) + varint_field(3, type));
}

// darts-clone units (darts.h): a node with `label`, whose children's block starts at
// index ^ offset (an offset below 2^21), and which may have a leaf; a leaf holding `value`.
inline uint32_t node_unit(uint32_t label, uint32_t offset, bool has_leaf) {
  return offset << 10 | (has_leaf ? 1u << 8 : 0u) | label;
}
inline uint32_t leaf_unit(uint32_t value) { return 0x80000000u | value; }

// A precompiled_charsmap: the trie's size in bytes, the trie, the replacement strings.
inline std::string charsmap(const std::vector<uint32_t>& units, const std::string& strings) {
  std::string trie;
  for (const uint32_t unit : units) trie += fixed32(unit);
  return fixed32(static_cast<uint32_t>(trie.size())) + trie + strings;
}

// The trie of the one rule "A" -> "a", as darts-clone lays it out: three blocks of 256 units.
// The root (unit 0) sends its children to block 1, where "A" is unit 256 ^ 0x41; that unit has
// a leaf and sends its children to block 2, whose first unit is the leaf (value 0: "a"). Units
// in no use hold a leaf unit, whose label no byte matches (darts-clone gives them labels that
// do not match their position instead).
inline std::vector<uint32_t> one_rule_trie() {
  std::vector<uint32_t> units(768, leaf_unit(0));
  units[0] = node_unit(0, 256, false);
  units[256 ^ 0x41] = node_unit(0x41, (256 ^ 0x41) ^ 512, true);
  units[512] = leaf_unit(0);
  return units;
}

}  // namespace ftbench::data::test
