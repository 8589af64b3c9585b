// ftbench's one SHA-256 (util/io/sha256.h): known vectors, piecewise feeding, and files.
#include "util/io/sha256.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "util/io/whole_file.h"

namespace ftbench::io {
namespace {

namespace fs = std::filesystem;

TEST(Sha256, OfKnownVectors) {
  // FIPS 180-2 test vectors.
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, FedPieceByPieceIsTheDigestOfTheWhole) {
  Sha256 digest;
  digest.update("abcdbcdecdefdefgefgh");
  digest.update("");
  digest.update("fghighijhijkijkljklmklmnlmnomnopnopq");
  EXPECT_EQ(digest.hex(), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

class Sha256File : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ftbench-sha256-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir_, ec)) fs::remove(entry.path(), ec);
    fs::remove(dir_, ec);
  }
  fs::path dir_;
};

// A file over the 1 MiB read buffer: the same digest as its bytes in memory.
TEST_F(Sha256File, OfAFileIsTheDigestOfItsBytes) {
  std::string bytes;
  for (int i = 0; i < (3 << 19) + 7; ++i) bytes += static_cast<char>(i * 31 % 251);
  const fs::path path = dir_ / "bytes.bin";
  std::ofstream(path, std::ios::binary) << bytes;
  EXPECT_EQ(sha256_of_file(path.string()), sha256_hex(bytes));
}

TEST_F(Sha256File, AMissingFileOrAFifoIsAReadErrorNamingIt) {
  const std::string missing = (dir_ / "missing.bin").string();
  try {
    (void)sha256_of_file(missing);
    ADD_FAILURE() << "no error for " << missing;
  } catch (const FileReadError& e) {
    EXPECT_EQ(std::string(e.what()), missing + ": cannot read: No such file or directory");
  }
  const std::string fifo = (dir_ / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  try {
    (void)sha256_of_file(fifo);
    ADD_FAILURE() << "no error for " << fifo;
  } catch (const FileReadError& e) {
    EXPECT_EQ(std::string(e.what()), fifo + ": cannot read: not a regular file");
  }
}

}  // namespace
}  // namespace ftbench::io
