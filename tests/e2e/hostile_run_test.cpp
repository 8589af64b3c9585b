// End to end: `ftbench run` and `ftbench gemm` (ftbench-bin, LibTorch) given hostile input or a
// failing disk. Bad input is refused before any training with exit code 2 and no output file; a
// write that fails (FTBENCH_INJECT_WRITE_FAILURE, report_io.h) ends with exit code 3, a message
// naming the file and the reason, and the previous file intact, with no temporary file left.
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "ftbench_process.h"
#include "hostile_gemm_corpus.h"
#include "spawned.h"

namespace {

namespace fs = std::filesystem;
using ftbench::e2e::Outcome;
using ftbench::e2e::run_ftbench;
using ftbench::e2e::ScratchDir;
using ftbench::e2e::shell_quote;
using ftbench::e2e::slurp;

const fs::path kCorpus = fs::path(FTBENCH_SOURCE_DIR) / "tests/hostile";
const std::string kPrevious = "{\"previous\": \"report, kept byte for byte\"}\n";

std::string q(const fs::path& p) { return shell_quote(p.string()); }

void expect_no_crash(const Outcome& r) {
  EXPECT_FALSE(r.timed_out) << "hung; stderr: " << r.err;
  EXPECT_EQ(r.signal, 0) << "killed by signal " << r.signal << "; stderr: " << r.err;
  for (const char* text : {"terminate called", "AddressSanitizer", "runtime error:", "bad_alloc",
                           "[json.exception", "what():"}) {
    EXPECT_EQ(r.err.find(text), std::string::npos) << "stderr has \"" << text << "\": " << r.err;
  }
}

std::vector<std::string> listing(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

class HostileRun : public ::testing::Test {
 protected:
  // Runs `args`, once with -o to a path that does not exist and once with --force over an
  // existing file: both refused with exit code 2 and `expected` on stderr, neither file
  // created or changed.
  void expect_refused_before_training(const std::string& args,
                                      const std::vector<std::string>& expected,
                                      const std::string& env = "") {
    const fs::path fresh = scratch_.path() / "fresh.json";
    const fs::path existing = scratch_.path() / "existing.json";
    std::ofstream(existing, std::ios::binary) << kPrevious;
    for (const std::string& output : {"-o " + q(fresh), "-o " + q(existing) + " --force"}) {
      SCOPED_TRACE("ftbench " + args + " " + output);
      const Outcome r = run_ftbench(args + " " + output, scratch_.path(), env, 120.0);
      expect_no_crash(r);
      EXPECT_EQ(r.exit_code, 2) << r.err;
      EXPECT_EQ(r.out, "");
      EXPECT_EQ(r.err.find("step 1"), std::string::npos) << "training started: " << r.err;
      for (const std::string& text : expected) {
        EXPECT_NE(r.err.find(text), std::string::npos) << "stderr lacks " << text << ": " << r.err;
      }
      EXPECT_FALSE(fs::exists(fresh));
      EXPECT_EQ(slurp(existing), kPrevious);
      EXPECT_EQ(listing(scratch_.path()), (std::vector<std::string>{"existing.json"}));
    }
  }

  ScratchDir scratch_{"ftbench-hostile-run"};
};

TEST_F(HostileRun, BadSpecsAreRefusedWithoutOutput) {
  for (const char* file :
       {"yaml-syntax-error.yaml", "wrong-types.yaml", "duplicate-keys.yaml", "billion-laughs.yaml",
        "negative-sizes.yaml", "overflowing-epochs.yaml", "overflowing-batch.yaml",
        "custom-shape-2-62.yaml", "empty.yaml", "second-document.yaml"}) {
    const fs::path spec = kCorpus / "specs" / file;
    expect_refused_before_training("run " + q(spec), {"error: invalid run spec\n" + spec.string()});
  }
  expect_refused_before_training("run " + q(scratch_.path()), {"cannot read file: Is a directory"});
}

// A data file is read once the run has started (data_prepare): as documented for every run that
// stops early, a report with status "failed" is written (docs/report-schema.md, `status`), but
// never over an existing file without --force. `ftbench validate` finds the same error first.
TEST_F(HostileRun, BadDataFailsTheRunWithAFailedReport) {
  const fs::path data = kCorpus / "data" / "broken-json.jsonl";
  const std::string args = "run configs/ci-tiny.yaml --set data.source=file --set " +
                           q("data.path=" + data.string()) +
                           " --set data.max_tokens=128 --set data.min_tokens=2 -o ";
  const fs::path existing = scratch_.path() / "existing.json";
  std::ofstream(existing, std::ios::binary) << kPrevious;
  const Outcome refused = run_ftbench(args + q(existing), scratch_.path(), "", 120.0);
  expect_no_crash(refused);
  EXPECT_EQ(refused.exit_code, 5) << refused.err;
  EXPECT_EQ(slurp(existing), kPrevious);

  const fs::path out = scratch_.path() / "failed.json";
  const Outcome r = run_ftbench(args + q(out), scratch_.path(), "", 120.0);
  expect_no_crash(r);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find(data.string() + ":2: malformed JSON"), std::string::npos) << r.err;
  const std::string report = slurp(out);
  EXPECT_NE(report.find("\"status\": \"failed\""), std::string::npos) << report.substr(0, 600);
  EXPECT_NE(report.find(data.string() + ":2: malformed JSON"), std::string::npos);
  EXPECT_EQ(listing(scratch_.path()),
            (std::vector<std::string>{"existing.json", "failed.json"}));  // no temporary file
}

TEST_F(HostileRun, BadGemmFilesAreRefusedBeforeTraining) {
  for (const std::string& file : ftbench::e2e::kHostileGemmFiles) {
    const fs::path gemm = kCorpus / "gemm" / file;
    expect_refused_before_training("run configs/ci-tiny.yaml --gemm " + q(gemm),
                                   {"error: " + gemm.string() + ": "});
  }
}

// --t0 nan wrote a report that `ftbench cost` then refused; --t0 -1e300 gave 300-digit dollar
// figures. The flag gets FTBENCH_T0's checks and a plausibility window: at most 30 days before
// the process start, not after it (issue 14, item 2).
TEST_F(HostileRun, ImplausibleExternalStartsAreRefusedBeforeTraining) {
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const std::string window = "expected the external start as Unix epoch seconds from ";
  for (const std::string& t0 :
       {std::string("nan"), std::string("-1e300"), std::string("inf"), std::string("0"),
        std::to_string(now - 31.0 * 86400.0), std::to_string(now + 3600.0)}) {
    expect_refused_before_training("run configs/ci-tiny.yaml --t0 " + t0,
                                   {"error: --t0: " + window});
  }
  expect_refused_before_training("run configs/ci-tiny.yaml", {"error: FTBENCH_T0: " + window},
                                 "FTBENCH_T0=nan");
  expect_refused_before_training("run configs/ci-tiny.yaml",
                                 {"error: FTBENCH_T0: expected Unix epoch seconds, found "
                                  "\"yesterday\""},
                                 "FTBENCH_T0=yesterday");
  // Hours or days before is a real external start (an instance booted, an image pulled).
  const fs::path out = scratch_.path() / "t0.json";
  const Outcome ok = run_ftbench(
      "run configs/ci-tiny.yaml --t0 " + std::to_string(now - 2.0 * 86400.0) + " -o " + q(out),
      scratch_.path(), "", 120.0);
  EXPECT_EQ(ok.exit_code, 0) << ok.err;
  const std::string report = slurp(out);
  EXPECT_NE(report.find("\"t0_source\": \"--t0\""), std::string::npos);
}

// Inputs without an end (issue 14, item 5): refused before training, the file named.
TEST_F(HostileRun, AGemmFileThatIsADeviceIsRefused) {
  expect_refused_before_training("run configs/ci-tiny.yaml --gemm /dev/zero",
                                 {"error: /dev/zero: cannot read: a character device"});
}

TEST_F(HostileRun, BadInjectionValueIsBadInput) {
  const fs::path out = scratch_.path() / "r.json";
  const Outcome r = run_ftbench("run configs/ci-tiny.yaml -o " + q(out), scratch_.path(),
                                "FTBENCH_INJECT_WRITE_FAILURE=ENOSPACE", 120.0);
  expect_no_crash(r);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("FTBENCH_INJECT_WRITE_FAILURE: unknown error name; expected ENOSPC"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(out));
}

// The disk fills up while the report is written at the end of a run: exit code 3, the file and
// the reason named, the report of the previous run intact, no temporary file left.
TEST_F(HostileRun, ReportWriteFailureKeepsThePreviousReport) {
  const fs::path out = scratch_.path() / "ci-tiny.json";
  for (const char* injection : {"ENOSPC", "EIO@4096"}) {
    SCOPED_TRACE(injection);
    std::ofstream(out, std::ios::binary) << kPrevious;
    const Outcome r =
        run_ftbench("run configs/ci-tiny.yaml -o " + q(out) + " --force", scratch_.path(),
                    std::string("FTBENCH_INJECT_WRITE_FAILURE=") + injection, 120.0);
    expect_no_crash(r);
    EXPECT_EQ(r.exit_code, 3) << r.err;
    EXPECT_NE(r.err.find("warning: FTBENCH_INJECT_WRITE_FAILURE is set"), std::string::npos);
    const std::string reason =
        std::string(injection) == "ENOSPC" ? "No space left on device" : "Input/output error";
    EXPECT_NE(
        r.err.find("error: cannot write " + out.string() + ": write " + out.string() + ".tmp."),
        std::string::npos)
        << r.err;
    EXPECT_NE(r.err.find(reason), std::string::npos) << r.err;
    EXPECT_EQ(slurp(out), kPrevious);
    EXPECT_EQ(listing(scratch_.path()), (std::vector<std::string>{"ci-tiny.json"}));
  }
}

TEST_F(HostileRun, GemmResultWriteFailureKeepsThePreviousFile) {
  const fs::path out = scratch_.path() / "gemm.json";
  std::ofstream(out, std::ios::binary) << kPrevious;
  const Outcome r = run_ftbench(
      "gemm --device cpu --dtype fp32 --shapes 64 --warmup 1 "
      "--iterations 2 --cache-flush-mib 0 -o " +
          q(out) + " --force",
      scratch_.path(), "FTBENCH_INJECT_WRITE_FAILURE=ENOSPC@100", 120.0);
  expect_no_crash(r);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_NE(r.err.find("error: cannot write " + out.string() + ": write "), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(out), kPrevious);
  EXPECT_EQ(listing(scratch_.path()), (std::vector<std::string>{"gemm.json"}));
}

TEST_F(HostileRun, GemmBadShapesWriteNothing) {
  const fs::path out = scratch_.path() / "gemm.json";
  const Outcome r =
      run_ftbench("gemm --device cpu --shapes '64x:x' -o " + q(out), scratch_.path(), "", 60.0);
  expect_no_crash(r);
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--shapes"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace

namespace {

// One rule for every output (util/io/output_rules.h, issue 39 item 3): never an input of the same
// invocation, never an ftbench file of another kind, never through a link, --force or not. Each
// of these used to be written: the spec turned into the report, the data file truncated before
// it was read, a report replaced by an event log or a GEMM result, a link's target overwritten.
TEST(OutputRules, NoOutputDestroysAnInputAReportOrALinksTarget) {
  const ScratchDir scratch("ftbench-output-rules");
  const fs::path dir = scratch.path();
  const fs::path spec = dir / "spec.yaml";
  const fs::path data = dir / "d.jsonl";
  const std::string spec_text =
      "model: {preset: tiny}\ndata: {source: file, path: " + data.string() +
      ", seq_len: 256, max_tokens: 256}\ntrain: {max_steps: 1, micro_batch_size: 2, "
      "grad_accum_steps: 1}\noutput: {progress: off}\n";
  std::ofstream(spec) << spec_text;
  std::string data_text;
  for (int i = 0; i < 8; ++i) {
    data_text += "{\"instruction\": \"a" + std::to_string(i) + "\", \"output\": \"b\"}\n";
  }
  std::ofstream(data) << data_text;
  const fs::path report = dir / "other-report.json";
  std::ofstream(report) << "{\"schema\": \"ftbench.report/1.16\"}\n";
  const std::string report_text = slurp(report);
  const fs::path target = dir / "target.txt";
  std::ofstream(target) << "the link's target\n";
  fs::create_symlink(target, dir / "link.log");

  struct Case {
    std::string args;
    std::string message;
  };
  const std::string run = "run " + q(spec) + " --force ";
  const std::vector<Case> cases = {
      {run + "-o " + q(spec), "-o \"" + spec.string() + "\" is the spec file"},
      {run + "-o " + q(data), "is data.path"},
      {run + "-o " + q(dir / "r.json") + " --mllog " + q(data),
       "--mllog \"" + data.string() + "\" is data.path"},
      {run + "-o " + q(dir / "r.json") + " --mllog " + q(spec), "is the spec file"},
      {run + "-o " + q(dir / "r.json") + " --mllog " + q(report),
       "is an ftbench report, not an event log"},
      {"gemm --device cpu --dtype fp32 --shapes 64:64:64 --iterations 1 --force -o " + q(report),
       "is an ftbench report, not a gemm result"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args);
    const Outcome r = run_ftbench(c.args, dir, "", 120.0);
    expect_no_crash(r);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_EQ(slurp(spec), spec_text);
    EXPECT_EQ(slurp(data), data_text);
    EXPECT_EQ(slurp(report), report_text);
    EXPECT_FALSE(fs::exists(dir / "r.json"));
  }
  // A link in the event log's place is replaced with --force, its target left as it was.
  const Outcome r = run_ftbench(run + "-o " + q(dir / "r.json") + " --mllog " + q(dir / "link.log"),
                                dir, "", 180.0);
  expect_no_crash(r);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(slurp(target), "the link's target\n");
  EXPECT_FALSE(fs::is_symlink(fs::symlink_status(dir / "link.log")));
  EXPECT_EQ(slurp(dir / "link.log").rfind(":::MLLOG ", 0), 0u);
}

}  // namespace

namespace {

// Under an address-space limit (ulimit -v) of 600 to 1000 MB a run ended in std::bad_alloc (exit
// 134, no report), a hang in LibTorch's thread-pool start-up that ignored SIGTERM, libgomp's
// "Thread creation failed" (exit 1), or a hang in OpenBLAS, which retries a buffer the limit
// refuses for good: while LibTorch loads (Debian 13, 600 and 700 MB, a CI failure) or at a
// thread's first GEMM (Debian 12, 850 to 1000 MB; Debian 13, 800 and 1100 MB) (issue 39, item
// 4). Now LibTorch that cannot load, or does not within FTBENCH_LOAD_CHECK_SECONDS, is said by
// the launcher; threads that cannot start by the backend; a thread that retries a refused
// mapping for good by ftbench-bin's mmap(); and each OpenMP worker sets its thread count at the
// start, not in a later step, where re-making LibTorch's pthreadpool deadlocked when a thread
// could not start (Debian 12 at 1020 and 1090 MB, 0 % CPU), now ended when pthreadpool cannot
// start a thread; a std::bad_alloc is said as out of memory (740 MB said only "std::bad_alloc");
// the failed report is built in address space held back for it (750 MB, Debian 12 under load:
// "terminate called after throwing std::bad_alloc", from the JSON library's destructor, which
// allocates, as an allocation failed while the report was built); a review then found 758 MB
// ("terminate called without an active exception"), 767 MB (std::bad_alloc while the command
// line was set up), 799 MB (glibc: "failed to register TLS destructor") and 848 MB (SIGSEGV: the
// stack could not grow for a 128 KiB frame of at::cos), now exit 3 with the main stack grown at
// the start:
// exit 3 with a message that says so (a
// failed report where the run can still write one); a limit that leaves room runs as usual. Which
// limits fail, and how, depends on the LibTorch, its OpenBLAS and the cores, so each is held to
// that rule whichever way it goes.
TEST(MemoryLimits, OutOfMemoryAnywhereIsExit3NeverACrashOrAHang) {
  const ScratchDir scratch("ftbench-memory-limits");
  for (const int megabytes :
       {600, 700, 740, 750, 758, 767, 799, 800, 848, 900, 1000, 1020, 1090, 1100}) {
    SCOPED_TRACE("ulimit -v " + std::to_string(megabytes * 1000));
    const fs::path report = scratch.path() / ("r" + std::to_string(megabytes) + ".json");
    const fs::path script = scratch.path() / "limited.sh";
    std::ofstream(script, std::ios::trunc)
        << "ulimit -v " << megabytes * 1000 << "\ncd " << shell_quote(FTBENCH_SOURCE_DIR)
        << " && FTBENCH_LOAD_CHECK_SECONDS=5 exec " << shell_quote(FTBENCH_BINARY)
        << " run configs/ci-tiny.yaml --set output.progress=off -o " << q(report) << "\n";
    ftbench::e2e::Spawned run({"bash", script.string()}, scratch.path());
    ASSERT_TRUE(run.spawned());
    const int code = run.wait(180.0);
    const std::string err = run.err();
    EXPECT_FALSE(run.timed_out) << "hung: " << err;
    EXPECT_EQ(run.signal, 0) << "killed by signal " << run.signal << ": " << err;
    EXPECT_TRUE(code == 0 || code == 3) << "exit " << code << ": " << err;
    for (const char* text : {"terminate called", "Thread creation failed", "bad_alloc\n"}) {
      EXPECT_EQ(err.find(text), std::string::npos) << err;
    }
    if (code == 3) {
      EXPECT_NE(err.find("out of memory"), std::string::npos) << err;
      if (fs::exists(report)) {
        EXPECT_EQ(slurp(report).find("\"status\": \"completed\""), std::string::npos);
      }
    }
    std::printf("ulimit -v %d000: exit %d\n", megabytes, code);
  }
}

}  // namespace

namespace {

// The launcher's check that LibTorch loads under an address-space limit waited for good when
// the check itself did not end: Debian 13's OpenBLAS 0.3.29, at 600 and 700 MB, retries its
// 128 MiB buffer for ever while LibTorch loads (mmap and malloc failing in turn, 100 % of a
// core), so CI's run hung with nothing said (a CI failure of MemoryLimits.* on Debian 13).
// A stand-in ftbench-bin that never ends (the real one does not spin here) shows the deadline
// (FTBENCH_LOAD_CHECK_SECONDS), and that a stop signal during the check ends it and the check.
struct NeverLoads {
  fs::path launcher;
  fs::path pid_file;
};
NeverLoads never_loading_ftbench_bin(const fs::path& dir) {
  NeverLoads n{dir / "ftbench", dir / "bin.pid"};
  fs::copy_file(FTBENCH_BINARY, n.launcher);
  const fs::path bin = dir / "ftbench-bin";
  std::ofstream(bin) << "#!/bin/sh\necho $$ > " << q(n.pid_file) << "\nexec sleep 300\n";
  fs::permissions(bin, fs::perms::owner_all);
  return n;
}

bool process_exists(const fs::path& pid_file) {
  const std::string pid = slurp(pid_file);
  return !pid.empty() && ::kill(std::stoi(pid), 0) == 0;
}

// gemm under a limit said LibTorch's "[enforce fail at alloc_cpu.cpp:75] ... can't allocate
// memory" alone (a review, 850 to 1200 MB): now out of memory, with the limit.
TEST(MemoryLimits, GemmOutOfMemoryIsSaidSo) {
  const ScratchDir scratch("ftbench-memory-limits-gemm");
  for (const int megabytes : {850, 1200}) {
    SCOPED_TRACE("ulimit -v " + std::to_string(megabytes * 1000));
    const fs::path script = scratch.path() / "limited.sh";
    std::ofstream(script, std::ios::trunc)
        << "ulimit -v " << megabytes * 1000 << "\nexec " << shell_quote(FTBENCH_BINARY)
        << " gemm --quick --device cpu --force -o " << q(scratch.path() / "g.json") << "\n";
    ftbench::e2e::Spawned run({"bash", script.string()}, scratch.path());
    ASSERT_TRUE(run.spawned());
    const int code = run.wait(180.0);
    EXPECT_FALSE(run.timed_out);
    EXPECT_TRUE(code == 0 || code == 3) << "exit " << code << ": " << run.err();
    if (code == 3) {
      EXPECT_NE(run.err().find("error: out of memory"), std::string::npos) << run.err();
    }
  }
}

TEST(MemoryLimits, ALoadCheckThatDoesNotEndIsCutAtItsDeadline) {
  const ScratchDir scratch("ftbench-load-deadline");
  const NeverLoads n = never_loading_ftbench_bin(scratch.path());
  const fs::path script = scratch.path() / "limited.sh";
  std::ofstream(script) << "ulimit -v 8000000\nFTBENCH_LOAD_CHECK_SECONDS=2 exec " << q(n.launcher)
                        << " run spec.yaml\n";
  ftbench::e2e::Spawned run({"bash", script.string()}, scratch.path());
  ASSERT_TRUE(run.spawned());
  const int code = run.wait(60.0);
  EXPECT_FALSE(run.timed_out);
  EXPECT_EQ(code, 3) << run.err();
  EXPECT_NE(run.err().find("error: out of memory: LibTorch did not load within 2 s under this "
                           "process's address-space limit of 7812 MiB (ulimit -v 8000000)"),
            std::string::npos)
      << run.err();
  EXPECT_FALSE(process_exists(n.pid_file));
}

TEST(MemoryLimits, AStopDuringTheLoadCheckEndsItAndTheCheck) {
  const ScratchDir scratch("ftbench-load-stop");
  const NeverLoads n = never_loading_ftbench_bin(scratch.path());
  const fs::path script = scratch.path() / "limited.sh";
  std::ofstream(script) << "ulimit -v 8000000\nexec " << q(n.launcher) << " run spec.yaml\n";
  ftbench::e2e::Spawned run({"bash", script.string()}, scratch.path());
  ASSERT_TRUE(run.spawned());
  for (int i = 0; i < 600 && slurp(n.pid_file).empty(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(process_exists(n.pid_file));
  ::kill(run.pid(), SIGTERM);
  const int code = run.wait(30.0);
  EXPECT_FALSE(run.timed_out);
  EXPECT_EQ(code, 4) << run.err();
  EXPECT_NE(run.err().find("stopped by SIGTERM while checking that LibTorch loads"),
            std::string::npos)
      << run.err();
  EXPECT_FALSE(process_exists(n.pid_file));
}

// Decimal only, as the spec's numbers and the flags are (a review found " 5", 0x10 and 1e3
// taken by strtod, and a newline printed raw).
TEST(MemoryLimits, TheLoadCheckDeadlineIsANumberOfSeconds) {
  const ScratchDir scratch("ftbench-load-setting");
  const NeverLoads n = never_loading_ftbench_bin(scratch.path());
  for (const std::string& value :
       {std::string("soon"), std::string(" 5"), std::string("0x10"), std::string("0"),
        std::string("3601"), std::string("nan"), std::string("5\n")}) {
    // With a limit and without one (a review): a mistyped value shows whether or not it is used.
    for (const std::string limit : {"ulimit -v 8000000\n", ""}) {
      SCOPED_TRACE(value + " " + limit);
      const fs::path script = scratch.path() / "limited.sh";
      std::ofstream(script) << limit << "export FTBENCH_LOAD_CHECK_SECONDS=" << shell_quote(value)
                            << "\nexec " << q(n.launcher) << " run spec.yaml\n";
      ftbench::e2e::Spawned run({"bash", script.string()}, scratch.path());
      ASSERT_TRUE(run.spawned());
      EXPECT_EQ(run.wait(30.0), 2) << run.err();
      const std::string shown = value == "5\n" ? "5\\x0A" : value;
      EXPECT_EQ(run.err(), "error: FTBENCH_LOAD_CHECK_SECONDS=\"" + shown +
                               "\": expected a number of seconds from 1 to 3600\n");
      EXPECT_FALSE(process_exists(n.pid_file));
    }
  }
}

}  // namespace

namespace {

// From a hostile review of the output rule (issue 39, item 3): output.adapter and output.merged
// with --force replaced a report, a spec, a file or a folder of other work with the export, and
// other commands' outputs replaced the files of an export folder, an event log or a GEMM result.
// Each is refused now (exit 2), the file or folder left as it was.
TEST(OutputRules, ExportsAndOtherCommandsReplaceNoFileOfAnotherKind) {
  const ScratchDir scratch("ftbench-output-rules-2");
  const fs::path dir = scratch.path();
  const fs::path report = dir / "other.json";
  std::ofstream(report) << "{\"schema\": \"ftbench.report/1.16\"}\n";
  fs::create_directories(dir / "work");
  std::ofstream(dir / "work" / "notes.txt") << "notes\n";
  fs::create_directories(dir / "merged");
  std::ofstream(dir / "merged" / "config.json") << "{\"model_type\": \"llama\"}\n";
  std::ofstream(dir / "merged" / "model.safetensors") << "weights";
  const fs::path log = dir / "events.log";
  std::ofstream(log) << ":::MLLOG {\"key\": \"init_start\"}\n";
  const fs::path gemm = dir / "g.json";
  std::ofstream(gemm) << "{\"schema\": \"ftbench.gemm/1.1\"}\n";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"run configs/ci-tiny.yaml --force -o " + q(dir / "r.json") + " --set " +
           q("output.adapter=" + report.string()),
       "a file, not a folder"},
      {"run configs/ci-tiny.yaml --force -o " + q(dir / "r.json") + " --set " +
           q("output.merged=" + (dir / "work").string()),
       "a folder without config.json: not an exported merged model"},
      {"gemm --device cpu --dtype fp32 --shapes 64:64:64 --iterations 1 --force -o " +
           q(dir / "merged" / "config.json"),
       "is an ftbench file of a model's weights folder, not a gemm result"},
      {"report tests/fixtures/reports/h100-reference.json --force --html " + q(log),
       "is an ftbench event log, not an HTML report"},
      {"report tests/fixtures/reports/h100-reference.json --force --markdown " + q(gemm),
       "is an ftbench gemm result, not a markdown summary"},
  };
  const auto snapshot = [&] {
    return slurp(report) + slurp(dir / "work" / "notes.txt") +
           slurp(dir / "merged" / "config.json") + slurp(log) + slurp(gemm);
  };
  const std::string before = snapshot();
  for (const auto& [args, message] : cases) {
    SCOPED_TRACE(args);
    const Outcome r = run_ftbench(args, dir, "", 120.0);
    expect_no_crash(r);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find(message), std::string::npos) << r.err;
    EXPECT_EQ(snapshot(), before);
    EXPECT_FALSE(fs::exists(dir / "r.json"));
  }
}

}  // namespace
