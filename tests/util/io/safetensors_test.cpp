#include "util/io/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>

#include <gtest/gtest.h>

namespace fs = std::filesystem;
using ftbench::io::parse_safetensors_index;
using ftbench::io::SafetensorsError;
using ftbench::io::SafetensorsReader;
using ftbench::io::TensorToWrite;
using ftbench::io::write_safetensors;

namespace {

std::string le64(uint64_t n) {
  std::string b(8, '\0');
  for (int i = 0; i < 8; ++i) b[size_t(i)] = char((n >> (8 * i)) & 0xff);
  return b;
}

// A file as the format describes it: length, header text, data.
std::string file_of(const std::string& header, const std::string& data) {
  return le64(header.size()) + header + data;
}

std::string error_of(const std::string& bytes) {
  try {
    parse_safetensors_index(bytes, bytes.size(), "x.safetensors");
  } catch (const SafetensorsError& e) {
    return e.what();
  }
  return "";
}

class SafetensorsFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ftbench_st_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  fs::path dir_;
};

}  // namespace

TEST(Safetensors, DtypeSizes) {
  EXPECT_EQ(ftbench::io::safetensors_dtype_bytes("F32"), 4);
  EXPECT_EQ(ftbench::io::safetensors_dtype_bytes("BF16"), 2);
  EXPECT_EQ(ftbench::io::safetensors_dtype_bytes("I64"), 8);
  EXPECT_EQ(ftbench::io::safetensors_dtype_bytes("F8_E4M3"), 1);
  EXPECT_EQ(ftbench::io::safetensors_dtype_bytes("F4"), 0);
  EXPECT_EQ(ftbench::io::safetensors_dtype_bytes("f32"), 0);
}

TEST(Safetensors, ParsesAHandMadeFile) {
  // Two tensors listed out of data order, metadata, trailing spaces in the header (allowed).
  const std::string header =
      R"({"b":{"dtype":"U8","shape":[3],"data_offsets":[8,11]},)"
      R"("__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}  )";
  const std::string bytes = file_of(header, std::string(11, 'x'));
  const auto index = parse_safetensors_index(bytes, bytes.size(), "x");
  ASSERT_EQ(index.tensors.size(), 2u);
  EXPECT_EQ(index.tensors[0].name, "a");
  EXPECT_EQ(index.tensors[1].name, "b");
  EXPECT_EQ(index.tensors[1].begin, 8u);
  EXPECT_EQ(index.tensors[1].end, 11u);
  EXPECT_EQ(index.tensors[0].shape, std::vector<int64_t>{2});
  EXPECT_EQ(index.metadata.at("format"), "pt");
  EXPECT_EQ(index.data_start, 8 + header.size());
  ASSERT_NE(index.find("b"), nullptr);
  EXPECT_EQ(index.find("c"), nullptr);
}

TEST(Safetensors, ScalarAndEmptyTensors) {
  const std::string header = R"({"s":{"dtype":"F64","shape":[],"data_offsets":[0,8]},)"
                             R"("e":{"dtype":"F32","shape":[0,4],"data_offsets":[8,8]}})";
  const std::string bytes = file_of(header, std::string(8, '\0'));
  const auto index = parse_safetensors_index(bytes, bytes.size(), "x");
  ASSERT_EQ(index.tensors.size(), 2u);
  EXPECT_EQ(index.find("s")->elements(), 1);
  EXPECT_EQ(index.find("e")->elements(), 0);
}

// Two tensors of one name: nlohmann kept the last and the file read as one tensor fewer (issue
// 39, the same defect as config.json's): refused, naming the file and the tensor.
TEST(Safetensors, ATensorNameGivenTwiceIsRefused) {
  const std::string t = R"({"dtype":"F32","shape":[1],"data_offsets":[0,4]})";
  EXPECT_EQ(error_of(file_of("{\"a\":" + t + ",\"a\":" + t + "}", std::string(4, 'x'))),
            "x.safetensors: the header: a: a key given twice in one object");
}

TEST(Safetensors, RejectsBrokenFilesNamingWhat) {
  const std::string ok = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  EXPECT_NE(error_of("abc").find("fewer than the 8"), std::string::npos);
  EXPECT_NE(error_of(le64(200'000'000) + "{}").find("at most"), std::string::npos);
  EXPECT_NE(error_of(le64(500) + "{}").find("truncated"), std::string::npos);
  EXPECT_NE(error_of(file_of("[1]", "")).find("does not start with '{'"), std::string::npos);
  EXPECT_NE(error_of(file_of("{\"a\":", "")).find("not valid JSON"), std::string::npos);
  // The parser's own wording without nlohmann's "[json.exception...]" head, at the file's byte.
  EXPECT_EQ(error_of(file_of("{\"a\" 1}", "")),
            "x.safetensors: the header is not valid JSON at byte 14: syntax error while parsing "
            "object separator - unexpected number literal; expected ':'");
  // Refused before parsing, as every JSON file ftbench reads is (text::kMaxJsonDepth).
  const std::string deep = "{\"a\":" + std::string(200, '[') + std::string(200, ']') + "}";
  EXPECT_EQ(
      error_of(file_of(deep, "")),
      "x.safetensors: the header: arrays or objects nested deeper than 128 levels (at byte 141)");
  // Data shorter or longer than the tensors say.
  EXPECT_NE(error_of(file_of(ok, std::string(7, 'x'))).find("truncated"), std::string::npos);
  EXPECT_NE(error_of(file_of(ok, std::string(9, 'x'))).find("trailing bytes"), std::string::npos);
  // Size that disagrees with shape x dtype.
  const std::string wrong = R"({"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})";
  EXPECT_EQ(error_of(file_of(wrong, std::string(8, 'x'))),
            "x.safetensors: tensor \"a\": data_offsets [0, 8] hold 8 bytes, but 3 F32 of shape "
            "[3] take 12");
  const std::string dtype = R"({"a":{"dtype":"F4","shape":[2],"data_offsets":[0,1]}})";
  EXPECT_NE(error_of(file_of(dtype, "x")).find("unknown dtype \"F4\""), std::string::npos);
  const std::string gap = R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})";
  EXPECT_NE(error_of(file_of(gap, "xx")).find("a gap in the data"), std::string::npos);
  const std::string overlap = R"({"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                              R"("b":{"dtype":"U8","shape":[2],"data_offsets":[1,3]}})";
  EXPECT_NE(error_of(file_of(overlap, "xxx")).find("overlaps"), std::string::npos);
  const std::string negative = R"({"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,0]}})";
  EXPECT_NE(error_of(file_of(negative, "")).find("expected integers >= 0"), std::string::npos);
  const std::string huge =
      R"({"a":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,0]}})";
  EXPECT_NE(error_of(file_of(huge, "")).find("too large"), std::string::npos);
  const std::string meta = R"({"__metadata__":{"k":1}})";
  EXPECT_NE(error_of(file_of(meta, "")).find("expected a string"), std::string::npos);
}

TEST_F(SafetensorsFile, WritesTheLayoutTheFormatDescribes) {
  const float a[2] = {1.0f, -2.5f};
  const uint8_t b[3] = {7, 8, 9};
  const fs::path path = dir_ / "t.safetensors";
  write_safetensors(path.string(),
                    {TensorToWrite{"a", "F32", {2}, a}, TensorToWrite{"b", "U8", {3}, b}},
                    {{"format", "pt"}});
  std::string header =
      R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
      R"("b":{"dtype":"U8","shape":[3],"data_offsets":[8,11]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string data(reinterpret_cast<const char*>(a), 8);
  data.append(reinterpret_cast<const char*>(b), 3);
  EXPECT_EQ(read(path), file_of(header, data));
  EXPECT_EQ((8 + header.size()) % 8, 0u);

  SafetensorsReader reader(path.string());
  ASSERT_EQ(reader.index().tensors.size(), 2u);
  float back[2] = {0, 0};
  reader.read_tensor(*reader.index().find("a"), back);
  EXPECT_EQ(std::memcmp(back, a, sizeof a), 0);
}

TEST_F(SafetensorsFile, ReaderNamesTheFileOfEveryProblem) {
  EXPECT_THROW(SafetensorsReader((dir_ / "missing").string()), SafetensorsError);
  EXPECT_THROW(SafetensorsReader(dir_.string()), SafetensorsError);
  const fs::path path = dir_ / "t.safetensors";
  const float a[4] = {1, 2, 3, 4};
  write_safetensors(path.string(), {TensorToWrite{"a", "F32", {4}, a}}, {});
  fs::resize_file(path, fs::file_size(path) - 1);
  try {
    SafetensorsReader r(path.string());
    FAIL() << "a truncated file was read";
  } catch (const SafetensorsError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(path.string() + ": truncated", 0), 0u) << e.what();
  }
}

// A FIFO in a weights file's place (issue 39, item 4) used to block the open for good, deaf to
// a stop signal: it is refused at once as not a regular file.
TEST_F(SafetensorsFile, AFifoIsRefusedNotWaitedOn) {
  const fs::path fifo = dir_ / "model.safetensors";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto opening = std::async(std::launch::async, [&] {
    try {
      SafetensorsReader reader(fifo.string());
    } catch (const SafetensorsError& e) {
      return std::string(e.what());
    }
    return std::string("opened");
  });
  if (opening.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);  // let the open end
    if (fd >= 0) ::close(fd);
    FAIL() << "the open of a FIFO waited for a writer";
  }
  EXPECT_EQ(opening.get(), fifo.string() + ": not a regular file");
}

TEST_F(SafetensorsFile, WriterRefusesBadNamesAndReportsWriteFailures) {
  const float a[1] = {1};
  const std::string path = (dir_ / "t.safetensors").string();
  EXPECT_THROW(write_safetensors(path, {{"a", "F32", {1}, a}, {"a", "F32", {1}, a}}, {}),
               SafetensorsError);
  EXPECT_THROW(write_safetensors(path, {{"a", "X", {1}, a}}, {}), SafetensorsError);
  ::setenv("FTBENCH_INJECT_WRITE_FAILURE", "checkpoint:ENOSPC", 1);
  try {
    write_safetensors(path, {{"a", "F32", {1}, a}}, {}, "checkpoint");
    ADD_FAILURE() << "the injected failure did not happen";
  } catch (const SafetensorsError& e) {
    EXPECT_EQ(std::string(e.what()), path + ": cannot write: No space left on device");
  }
  // Another kind is not affected.
  write_safetensors(path, {{"a", "F32", {1}, a}}, {}, "report");
  ::unsetenv("FTBENCH_INJECT_WRITE_FAILURE");
  EXPECT_EQ(SafetensorsReader(path).index().tensors.size(), 1u);
}

TEST_F(SafetensorsFile, StreamingWriterWritesTheSameFileTensorByTensor) {
  const float a[2] = {1.0f, -2.5f};
  const uint8_t b[3] = {7, 8, 9};
  const fs::path whole = dir_ / "whole.safetensors";
  const fs::path streamed = dir_ / "streamed.safetensors";
  write_safetensors(whole.string(),
                    {TensorToWrite{"a", "F32", {2}, a}, TensorToWrite{"b", "U8", {3}, b}},
                    {{"format", "pt"}});
  ftbench::io::SafetensorsWriter writer(streamed.string(), {{"a", "F32", {2}}, {"b", "U8", {3}}},
                                        {{"format", "pt"}});
  writer.write_next(a, sizeof a);
  writer.write_next(b, sizeof b);
  writer.finish();
  EXPECT_EQ(read(streamed), read(whole));
  EXPECT_EQ(writer.file_bytes(), fs::file_size(streamed));
}

TEST_F(SafetensorsFile, StreamingWriterRefusesCallsOutOfStep) {
  const float a[2] = {1.0f, -2.5f};
  const std::string path = (dir_ / "t.safetensors").string();
  {
    ftbench::io::SafetensorsWriter writer(path, {{"a", "F32", {2}}}, {});
    try {
      writer.write_next(a, 4);
      ADD_FAILURE() << "a short tensor was accepted";
    } catch (const SafetensorsError& e) {
      EXPECT_EQ(std::string(e.what()), path + ": tensor \"a\": 4 bytes given, its header says 8");
    }
    try {
      writer.finish();
      ADD_FAILURE() << "an incomplete file was finished";
    } catch (const SafetensorsError& e) {
      EXPECT_EQ(std::string(e.what()), path + ": finish() after 0 of 1 tensors");
    }
    writer.write_next(a, sizeof a);
    EXPECT_THROW(writer.write_next(a, sizeof a), SafetensorsError);
    writer.finish();
  }
  EXPECT_EQ(SafetensorsReader(path).index().tensors.size(), 1u);
}
