// Whole-file reads with limits (issue 14, item 5): /dev/zero or an endless pipe as any input grew
// memory until the machine ran out; now each kind of file has a limit and devices are refused.
#include "util/io/whole_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <future>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace ftbench::io {
namespace {

namespace fs = std::filesystem;

class WholeFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("ftbench-whole-file-" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name, std::ios::binary) << text;
    return dir_ / name;
  }
  // The reason of the FileReadError `f` throws, or "no error".
  template <class F>
  static std::string reason_of(F&& f) {
    try {
      f();
    } catch (const FileReadError& e) {
      EXPECT_EQ(std::string(e.what()), e.path() + ": " + e.reason());
      return e.reason();
    }
    return "no error";
  }
  fs::path dir_;
};

constexpr FileKind kTiny{"tiny file", 10};

TEST_F(WholeFile, ReadsAFileWithinItsLimit) {
  EXPECT_EQ(read_whole_file(write("a", "0123456789").string(), kTiny), "0123456789");
  EXPECT_EQ(read_whole_file(write("empty", "").string(), kTiny), "");
}

TEST_F(WholeFile, RefusesWhatCannotBeAFile) {
  EXPECT_EQ(reason_of([] { read_whole_file("/dev/zero", kRunSpecFile); }),
            "a character device (such as /dev/zero or a terminal), not a file");
  EXPECT_EQ(reason_of([&] { read_whole_file(dir_.string(), kReportFile); }), "Is a directory");
  EXPECT_EQ(reason_of([&] { read_whole_file((dir_ / "absent").string(), kReportFile); }),
            "No such file or directory");
  EXPECT_EQ(reason_of([&] { read_whole_file(write("b", "01234567890").string(), kTiny); }),
            "11 bytes; a tiny file holds at most 10 bytes");
}

// A pipe is read up to its kind's limit: an endless one (here a writer that never stops) ends in
// an error, not in exhausted memory.
TEST_F(WholeFile, AnEndlessPipeStopsAtTheLimit) {
  const fs::path fifo = dir_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // The reader stops early: the writer then gets EPIPE instead of being killed by SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
  std::thread writer([&] {
    std::ofstream out(fifo, std::ios::binary);
    const std::string chunk(1 << 16, 'x');
    for (int i = 0; i < 64 && out; ++i) out << chunk;  // 4 MiB, more than the limit
  });
  constexpr FileKind kSmall{"test stream", 1 << 20};
  EXPECT_EQ(reason_of([&] { read_whole_file(fifo.string(), kSmall); }),
            "more than 1 MiB (a stream that does not end?); a test stream holds at most 1 MiB");
  writer.join();
  // A pipe that ends within the limit is read whole.
  std::thread short_writer([&] { std::ofstream(fifo, std::ios::binary) << "{}"; });
  EXPECT_EQ(read_whole_file(fifo.string(), kSmall), "{}");
  short_writer.join();
}

// A FIFO that no process writes to (issue 39, item 4: a spec, a catalog, segments.json, an HF
// config.json given as one) used to block the open for good, a stop signal included. It is now
// refused after a bounded wait, naming the file.
TEST_F(WholeFile, AFifoWithoutAWriterIsRefusedNotWaitedOnForGood) {
  const fs::path fifo = dir_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  auto reading = std::async(std::launch::async, [&] {
    return reason_of([&] { read_whole_file(fifo.string(), kRunSpecFile); });
  });
  if (reading.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
    // Unblock the reader (a writer's open) before failing, so that the test ends.
    const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);
    if (fd >= 0) ::close(fd);
    FAIL() << "the read of a FIFO without a writer did not end within 30 s";
  }
  EXPECT_EQ(reading.get(),
            "a FIFO that no process wrote to within 10 s: nothing to read (give a regular file, "
            "or start its writer first)");
  // A writer that comes while the reader waits is read as before.
  std::thread late_writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    std::ofstream(fifo, std::ios::binary) << "late";
  });
  EXPECT_EQ(read_whole_file(fifo.string(), kRunSpecFile), "late");
  late_writer.join();
}

TEST(WholeFileLimits, AreStatedInWords) {
  EXPECT_EQ(format_limit(kRunSpecFile.max_bytes), "1 MiB");
  EXPECT_EQ(format_limit(kReportFile.max_bytes), "1 GiB");
  EXPECT_EQ(format_limit(kDataLinesFile.max_bytes), "16 GiB");
  EXPECT_EQ(format_limit(3 * kGiB / 2), "1.5 GiB");
  EXPECT_EQ(format_limit(4096), "4096 bytes");
}

TEST_F(WholeFile, LineReaderGivesLinesAndStopsAtALongOne) {
  const fs::path path = write("lines", "one\r\ntwo\n\nlast without newline");
  LineReader lines(path.string(), kReportFile, 100);
  EXPECT_EQ(lines.peek().substr(0, 3), "one");
  std::vector<std::string> got;
  std::string line;
  while (lines.next(line)) got.push_back(line);
  EXPECT_EQ(got, (std::vector<std::string>{"one\r", "two", "", "last without newline"}));
  EXPECT_EQ(lines.line_number(), 4);

  const fs::path long_line = write("long", "short\n" + std::string(200000, 'y') + "\nafter\n");
  LineReader limited(long_line.string(), kReportFile, 1000);
  ASSERT_TRUE(limited.next(line));
  EXPECT_EQ(reason_of([&] { limited.next(line); }),
            "line 2 is longer than 1000 bytes; a line of a report holds at most that");

  // Exactly at the limit is a line; one byte more is not, wherever its newline falls.
  const fs::path edge =
      write("edge", std::string(1000, 'a') + "\n" + std::string(1001, 'b') + "\n");
  LineReader at_limit(edge.string(), kReportFile, 1000);
  ASSERT_TRUE(at_limit.next(line));
  EXPECT_EQ(line.size(), 1000u);
  EXPECT_EQ(reason_of([&] { at_limit.next(line); }),
            "line 2 is longer than 1000 bytes; a line of a report holds at most that");
  const fs::path last = write("last", std::string(1001, 'c'));
  LineReader last_line(last.string(), kReportFile, 1000);
  EXPECT_EQ(reason_of([&] { last_line.next(line); }),
            "line 1 is longer than 1000 bytes; a line of a report holds at most that");

  // The rest of the file in one piece, as for a JSON array.
  LineReader whole(path.string(), kReportFile, 100);
  ASSERT_TRUE(whole.next(line));
  EXPECT_EQ(whole.rest(kReportFile), "two\n\nlast without newline");
  LineReader too_big(long_line.string(), kReportFile, 1 << 20);
  EXPECT_EQ(reason_of([&] { too_big.rest(kTiny); }),
            "more than 10 bytes; a tiny file holds at most 10 bytes");
  EXPECT_EQ(reason_of([] { LineReader devices("/dev/zero", kDataLinesFile, 100); }),
            "a character device (such as /dev/zero or a terminal), not a file");
}

}  // namespace
}  // namespace ftbench::io
