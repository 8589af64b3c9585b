// Checks of a SentencePiece .model file (a serialized sentencepiece.ModelProto) made before
// libsentencepiece is given it. The library trusts what parses as a protobuf: a normalizer's
// precompiled_charsmap whose double-array trie sends a lookup outside the array, or whose leaf
// points outside the replacement strings after it, makes its normalizer read past the model
// (issue 39: one changed byte of a trained model, SIGSEGV in `tokenize` and `validate`).
// Torch-free and pure, so that the fuzz target fuzz/sentencepiece_model.cpp runs it.
//
// The wire format, as sentencepiece_model.proto defines it (field numbers): ModelProto pieces 1
// (repeated SentencePiece: piece 1, score 2 as float, type 3), trainer_spec 2 (model_type 3,
// byte_fallback 35, unk_id 40, bos_id 41, eos_id 42, pad_id 43), normalizer_spec 3 and
// denormalizer_spec 5 (NormalizerSpec: precompiled_charsmap 2).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ftbench::data {

// What the checks read of an accepted model.
struct SentencePieceModelInfo {
  int64_t pieces = 0;
  // TrainerSpec.ModelType: 1 unigram, 2 BPE, 3 word, 4 char.
  int64_t model_type = 1;
  // Units of the double-array trie of each spec's precompiled_charsmap; 0 where it has none.
  int64_t normalizer_trie_units = 0;
  int64_t denormalizer_trie_units = 0;
};

// A precompiled_charsmap's trie larger than this is refused: its check visits up to 256 units
// per node, and the trie of SentencePiece's largest built-in rule set (nmt_nfkc_cf) takes 182 KB.
inline constexpr uint64_t kMaxCharsmapTrieBytes = uint64_t{4} << 20;

// Checks the whole model: the protobuf wire format of ModelProto and of the messages ftbench or
// the library reads (each length inside its message, no groups, the wire type its field
// declares); every piece (non-empty text, a finite score, a type of 1 to 6, a byte piece spelled
// "<0x4A>" in a model with byte_fallback, one unknown piece); model_type 1 to 4; unk_id, bos_id,
// eos_id and pad_id each -1 or a piece's id; trainer_spec and normalizer_spec present (the
// trainer writes both after the pieces: without them the file was cut off); and each
// precompiled_charsmap (check_precompiled_charsmap). Throws TokenizerError
// "SentencePiece model \"<source>\": <field>: expected ..., found ..." at the first problem.
SentencePieceModelInfo check_sentencepiece_model(std::string_view serialized_model,
                                                 const std::string& source);

// Checks one NormalizerSpec.precompiled_charsmap (empty: none, accepted), laid out as
// SentencePiece's normalizer reads it: a little-endian uint32 N, then N bytes of a darts-clone
// double array (N / 4 units of 32 bits: label, has-leaf bit, offset to the children's block; a
// leaf unit holds a value), then the replacement strings, each ending in a NUL byte. A lookup
// walks the array from unit 0 by the bytes of the text: from a node it reads the unit of its
// children's 256-unit block that the next byte selects, whatever that byte, before it compares
// the unit's label. So the whole block of every node a lookup can reach must lie inside the
// array; every leaf value must be an offset into the strings with a NUL after it; no path may
// come back to a unit on it, nor pass more than 32 leaves (the normalizer keeps 32 matches and
// reads as many as it counted). Returns the number of trie units; throws TokenizerError naming
// `source`, `field` and the unit, with the bytes that reach it.
int64_t check_precompiled_charsmap(std::string_view charsmap, const std::string& source,
                                   std::string_view field);

}  // namespace ftbench::data
