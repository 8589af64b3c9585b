// SentencePiece next to LibTorch: both carry protobuf, and linked into one program they crash
// before main(). ftbench loads SentencePiece as a module with its own symbols first
// (src/data/spm/sentencepiece_backend.cpp); this test runs in the LibTorch test binary to prove it.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "../../ci_env.h"
#include "data/load_tokenizer.h"
#include "data/sentencepiece_tokenizer.h"
#include "util/io/remove_tree.h"

namespace ftbench::data {
namespace {

TEST(SentencePieceWithTorch, LoadsAndEncodesInALibTorchProcess) {
  if (std::system("command -v spm_train > /dev/null 2>&1") != 0) {
    // scripts/setup.sh installs it: on CI (ci_env.h) its absence is a failure.
    if (test_env::on_ci()) FAIL() << "spm_train (Debian package sentencepiece) is missing on CI";
    GTEST_SKIP() << "spm_train (Debian package sentencepiece) is not installed";
  }
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("ftbench-spm-torch-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  {
    std::ofstream text(dir / "corpus.txt");
    for (int i = 0; i < 200; ++i) {
      text << "the quick brown fox " << i << " jumps over the lazy dog again and again\n";
    }
  }
  const std::string command = "cd '" + dir.string() +
                              "' && spm_train --input=corpus.txt --model_prefix=m "
                              "--vocab_size=120 --model_type=bpe --bos_id=1 --eos_id=2 "
                              "--unk_id=0 --pad_id=-1 --num_threads=1 --minloglevel=2 "
                              "> train.log 2>&1";
  ASSERT_EQ(std::system(command.c_str()), 0) << "spm_train failed; see " << dir / "train.log";

  const at::Tensor before = at::ones({2, 2});
  const auto tokenizer = load_tokenizer((dir / "m.model").string());
  const std::vector<int32_t> ids = tokenizer->encode("the quick brown fox");
  ASSERT_FALSE(ids.empty());
  for (const int32_t id : ids) {
    EXPECT_GE(id, 0);
    EXPECT_LT(id, tokenizer->vocab_size());
  }
  EXPECT_EQ(tokenizer->decode(ids), "the quick brown fox");
  EXPECT_EQ(tokenizer->bos_id(), 1);
  EXPECT_EQ(tokenizer->eos_id(), 2);
  // LibTorch still works after SentencePiece was loaded.
  EXPECT_EQ(at::sum(before).item<float>(), 4.0f);
  ftbench::io::remove_tree(dir);
}

}  // namespace
}  // namespace ftbench::data
