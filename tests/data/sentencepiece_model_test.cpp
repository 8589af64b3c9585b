#include "data/sentencepiece_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "data/tokenizer.h"
#include "model_proto_writer.h"

namespace ftbench::data {
namespace {

using test::bytes_field;
using test::charsmap;
using test::fixed32;
using test::leaf_unit;
using test::node_unit;
using test::one_rule_trie;
using test::piece_field;
using test::varint_field;

namespace fs = std::filesystem;

const std::string kSource = "m.model";
const std::string kPrefix = "SentencePiece model \"m.model\": ";

// <unk> <s> </s> "a" "▁".
std::string pieces() {
  return piece_field("<unk>", 0.0F, 2) + piece_field("<s>", 0.0F, 3) +
         piece_field("</s>", 0.0F, 3) + piece_field("a", -1.0F, 1) +
         piece_field("\xE2\x96\x81", -2.0F, 1);
}

// A unigram model of pieces() (or `all_pieces`), the normalizer's precompiled_charsmap `map`.
std::string model(const std::string& map, const std::string& all_pieces = pieces(),
                  const std::string& trainer_spec = varint_field(3, 1)) {
  return all_pieces + bytes_field(2, trainer_spec) +
         bytes_field(3, bytes_field(1, "custom") + bytes_field(2, map));
}

std::string one_rule_map() { return charsmap(one_rule_trie(), std::string("a\0", 2)); }

// The message check_sentencepiece_model throws for `bytes`, or "" (a failure) when it accepts.
std::string refusal(const std::string& bytes) {
  try {
    check_sentencepiece_model(bytes, kSource);
  } catch (const TokenizerError& e) {
    return e.what();
  }
  ADD_FAILURE() << "accepted";
  return "";
}

std::string map_refusal(const std::string& map) { return refusal(model(map)); }

// Keys "A", "AA", ...: `leaves` of them, each with a leaf, all on one path.
std::vector<uint32_t> chain_trie(uint32_t leaves) {
  std::vector<uint32_t> units(256 * (leaves + 2), leaf_unit(0));
  units[0] = node_unit(0, 256, false);
  for (uint32_t depth = 1; depth <= leaves; ++depth) {
    const uint32_t index = 256 * depth ^ 0x41;
    units[index] = node_unit(0x41, index ^ (256 * (depth + 1)), true);
  }
  return units;
}

TEST(SentencePieceModel, AcceptsAOneRuleCharsmap) {
  const SentencePieceModelInfo info = check_sentencepiece_model(model(one_rule_map()), kSource);
  EXPECT_EQ(info.pieces, 5);
  EXPECT_EQ(info.model_type, 1);
  EXPECT_EQ(info.normalizer_trie_units, 768);
  EXPECT_EQ(info.denormalizer_trie_units, 0);
  EXPECT_EQ(check_precompiled_charsmap("", kSource, "x"), 0) << "no charsmap: nothing to check";
}

TEST(SentencePieceModel, ChildrenOutsideTheTrie) {
  std::vector<uint32_t> units = one_rule_trie();
  units[256 ^ 0x41] = node_unit(0x41, (256 ^ 0x41) ^ 1024, true);
  EXPECT_EQ(map_refusal(charsmap(units, std::string("a\0", 2))),
            kPrefix +
                "normalizer_spec.precompiled_charsmap: trie unit 321 (reached by the bytes 41): "
                "expected its children's units 1024 to 1279 inside the trie, found a trie of 768 "
                "units");
  units = one_rule_trie();
  units[0] = node_unit(0, 768, false);
  EXPECT_EQ(map_refusal(charsmap(units, std::string("a\0", 2))),
            kPrefix +
                "normalizer_spec.precompiled_charsmap: trie unit 0 (the root): expected its "
                "children's units 768 to 1023 inside the trie, found a trie of 768 units");
}

TEST(SentencePieceModel, LeafOutsideTheStrings) {
  std::vector<uint32_t> units = one_rule_trie();
  units[512] = leaf_unit(2);
  EXPECT_EQ(map_refusal(charsmap(units, std::string("a\0", 2))),
            kPrefix +
                "normalizer_spec.precompiled_charsmap: trie unit 321 (reached by the bytes 41): "
                "expected its leaf to point into the 2 bytes of replacement strings, found "
                "offset 2");
  EXPECT_EQ(map_refusal(charsmap(one_rule_trie(), "ab")),
            kPrefix +
                "normalizer_spec.precompiled_charsmap: trie unit 321 (reached by the bytes 41): "
                "expected a NUL byte at or after offset 0 of the 2 bytes of replacement strings, "
                "found none");
}

TEST(SentencePieceModel, PathBackIntoItself) {
  std::vector<uint32_t> units = one_rule_trie();
  units[256 ^ 0x41] = node_unit(0x41, (256 ^ 0x41) ^ 256, true);  // its children: block 1
  EXPECT_EQ(map_refusal(charsmap(units, std::string("a\0", 2))),
            kPrefix +
                "normalizer_spec.precompiled_charsmap: trie unit 321 (reached by the bytes 41): "
                "expected a trie, found a path back to unit 321 by byte 41");
}

// The normalizer keeps 32 matches of a lookup and reads as many as it counted.
TEST(SentencePieceModel, AtMost32LeavesOnAPath) {
  const std::string strings("a\0", 2);
  EXPECT_EQ(check_precompiled_charsmap(charsmap(chain_trie(32), strings), kSource, "x"), 256 * 34);
  EXPECT_EQ(map_refusal(charsmap(chain_trie(33), strings)),
            kPrefix +
                "normalizer_spec.precompiled_charsmap: trie unit 321 (reached by the bytes 41): "
                "expected at most 32 leaves on a path through it, found 33");
}

TEST(SentencePieceModel, TrieSizeAndLayout) {
  EXPECT_EQ(map_refusal(fixed32(5000) + "12345678"),
            kPrefix +
                "normalizer_spec.precompiled_charsmap: expected a trie of at most the 8 bytes "
                "after its size, found a size of 5000");
  EXPECT_EQ(map_refusal("\x01\x02"),
            kPrefix +
                "normalizer_spec.precompiled_charsmap: expected a 4-byte trie size and the trie, "
                "found 2 bytes");
  EXPECT_EQ(map_refusal(fixed32(3) + "abc" + std::string("a\0", 2)),
            kPrefix +
                "normalizer_spec.precompiled_charsmap: the trie: expected at least one 4-byte "
                "unit, found 3 bytes");
  const uint32_t too_large = kMaxCharsmapTrieBytes + 4;
  EXPECT_EQ(map_refusal(fixed32(too_large) + std::string(too_large, '\0')),
            kPrefix +
                "normalizer_spec.precompiled_charsmap: expected a trie of at most 4194304 "
                "bytes, found 4194308");
}

TEST(SentencePieceModel, DenormalizerCharsmapIsCheckedToo) {
  std::vector<uint32_t> units = one_rule_trie();
  units[512] = leaf_unit(7);
  const std::string bytes = model(one_rule_map()) +
                            bytes_field(5, bytes_field(2, charsmap(units, std::string("a\0", 2))));
  EXPECT_EQ(refusal(bytes),
            kPrefix +
                "denormalizer_spec.precompiled_charsmap: trie unit 321 (reached by the bytes 41): "
                "expected its leaf to point into the 2 bytes of replacement strings, found "
                "offset 7");
}

TEST(SentencePieceModel, EveryPieceIsChecked) {
  // pieces[5] starts at byte size() + 2 (its key and one-byte length) of the file.
  const std::string at = "pieces[5] (byte " + std::to_string(pieces().size() + 2) + " of the file)";
  EXPECT_EQ(refusal(model("", pieces() + piece_field("", -1.0F, 1))),
            kPrefix + at + ": expected the piece's text, found \"\"");
  EXPECT_EQ(refusal(model("", pieces() + piece_field("b", -1.0F, 7))),
            kPrefix + at +
                ": type: expected 1 to 6 (normal, unknown, control, user-defined, unused, byte), "
                "found 7");
  EXPECT_EQ(refusal(model("", pieces() + piece_field("<0x4a>", 0.0F, 6))),
            kPrefix + at + ": a byte piece: expected its text as \"<0x4A>\", found \"<0x4a>\"");
  EXPECT_EQ(
      refusal(model("", pieces() + piece_field("b", std::numeric_limits<float>::quiet_NaN(), 1))),
      kPrefix + at + ": expected a finite score, found nan");
  EXPECT_EQ(refusal(model("", pieces().substr(piece_field("<unk>", 0.0F, 2).size()))),
            kPrefix + "expected one piece of type unknown (2), found 0");
  const SentencePieceModelInfo bytes =
      check_sentencepiece_model(model("", pieces() + piece_field("<0x4A>", 0.0F, 6)), kSource);
  EXPECT_EQ(bytes.pieces, 6);
}

TEST(SentencePieceModel, SpecialIdsArePiecesOrNone) {
  const std::string minus_one = varint_field(43, ~uint64_t{0});  // pad_id -1, as spm_train writes
  EXPECT_EQ(check_sentencepiece_model(model("", pieces(), varint_field(3, 1) + minus_one), kSource)
                .pieces,
            5);
  EXPECT_EQ(refusal(model("", pieces(), varint_field(41, 5))),
            kPrefix + "trainer_spec.bos_id: expected -1 (none) or a piece's id, 0 to 4, found 5");
  EXPECT_EQ(refusal(model("", pieces(), varint_field(3, 7))),
            kPrefix + "trainer_spec (byte " + std::to_string(pieces().size() + 2) +
                " of the file): model_type: expected 1 to 4 (unigram, BPE, word, char), found 7");
}

TEST(SentencePieceModel, WireFormat) {
  const std::string valid = model(one_rule_map());
  const std::string at = "ModelProto (byte " + std::to_string(valid.size()) + " of the file): ";
  EXPECT_EQ(refusal(valid + "\x0a\x10"
                            "ab"),
            kPrefix + at + "field 1: expected 16 bytes, found the end of the message after 2");
  EXPECT_EQ(refusal(valid + "\x0b"), kPrefix + at +
                                         "field 1: expected wire type 0, 1, 2 or 5, "
                                         "found 3");
  EXPECT_EQ(refusal(valid + varint_field(1, 5)),
            kPrefix + at + "pieces (field 1): expected a length-delimited value, found a varint");
  EXPECT_EQ(refusal(valid + "\x0a\x80"),
            kPrefix + "ModelProto (byte " + std::to_string(valid.size() + 1) +
                " of the file): expected a length (a varint of at most 10 bytes), found the end "
                "of the message");
  EXPECT_EQ(refusal(pieces() + bytes_field(2, varint_field(3, 1))),
            kPrefix + "no normalizer_spec after the 5 pieces: the file looks truncated");
  EXPECT_EQ(refusal(""), kPrefix + "expected pieces, found none");
}

// Models trained by spm_train (the fuzz target's seeds) pass; the mutant that crashed
// SentencePiece's normalizer (issue 39) does not.
TEST(SentencePieceModel, TrainedModelsAndTheCrashingMutant) {
  const fs::path fuzz = fs::path(FTBENCH_SOURCE_DIR) / "fuzz";
  const auto read = [](const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  int seeds = 0;
  for (const auto& entry : fs::directory_iterator(fuzz / "corpus/sentencepiece_model")) {
    const std::string bytes = read(entry.path());
    EXPECT_GT(check_sentencepiece_model(bytes, entry.path().string()).pieces, 0);
    ++seeds;
  }
  EXPECT_GE(seeds, 2);
  EXPECT_EQ(
      refusal(read(fuzz / "regressions/sentencepiece_model/charsmap-leaf-past-strings.model")),
      kPrefix +
          "normalizer_spec.precompiled_charsmap: trie unit 1 (reached by the bytes 41): "
          "expected its leaf to point into the 4 bytes of replacement strings, found offset "
          "8388610");
}

}  // namespace
}  // namespace ftbench::data
