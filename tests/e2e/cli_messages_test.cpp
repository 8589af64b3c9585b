// End to end: what `ftbench` says about its own command line: a mistyped subcommand gets a
// "did you mean", and every subcommand's --help lists what it takes (the torch-free `ftbench`).
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "ftbench_process.h"

namespace {

namespace fs = std::filesystem;
using ftbench::e2e::Outcome;
using ftbench::e2e::run_ftbench;
using ftbench::e2e::ScratchDir;

Outcome ftbench(const std::string& args) {
  const ScratchDir scratch("ftbench-cli-messages");
  return run_ftbench(args, scratch.path(), "", 60.0);
}

// Every refusal of the command line starts "error: ", as the library's do; CLI11's own (a
// missing argument or value) came without it (found by a review).
TEST(CliMessages, EveryArgumentErrorStartsWithError) {
  for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
           {"", "error: A subcommand is required\n"},
           {"validate", "error: spec is required\n"},
           {"cost --rate", "error: --rate: 1 required FLOAT missing\n"},
           {"validate configs/ci-tiny.yaml --nope",
            "error: The following argument was not "
            "expected: --nope\n"},
           {"cost --rate=", "error: --rate: expected a value, found an empty string\n"}}) {
    SCOPED_TRACE(args);
    const Outcome r = ftbench(args);
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err.rfind(message, 0), 0u) << r.err;
  }
  // Help is no error.
  const Outcome help = ftbench("validate --help");
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_EQ(help.out.rfind("Check a spec", 0), 0u) << help.out;
}

TEST(CliMessages, AMistypedSubcommandGetsADidYouMean) {
  struct Case {
    std::string args;
    std::string hint;
  };
  for (const Case& c : {Case{"rn", "did you mean \"run\"?"},
                        Case{"rn configs/ci-tiny.yaml", "did you mean \"run\"?"},
                        Case{"--log-level warn cots r.json", "did you mean \"cost\"?"},
                        Case{"comapre a.json b.json", "did you mean \"compare\"?"},
                        Case{"validte configs/ci-tiny.yaml", "did you mean \"validate\"?"}}) {
    SCOPED_TRACE(c.args);
    const Outcome r = ftbench(c.args);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_NE(r.err.find("unknown subcommand"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.hint), std::string::npos) << r.err;
  }
  // Nothing close: the subcommands are listed instead.
  const Outcome r = ftbench("zzzzzzzz");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("unknown subcommand \"zzzzzzzz\""), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("cost"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("run"), std::string::npos) << r.err;
}

TEST(CliMessages, EverySubcommandsHelpListsTheLogLevel) {
  std::vector<std::string> commands = {"validate", "cost",     "compare", "gate",
                                       "catalog",  "tokenize", "devices"};
  // run, gemm and logits are ftbench-bin's, which a build without LibTorch does not have.
  if (fs::exists(fs::path(FTBENCH_BINARY).parent_path() / "ftbench-bin")) {
    commands.insert(commands.end(), {"run", "gemm", "logits"});
  }
  for (const std::string& command : commands) {
    SCOPED_TRACE(command);
    const Outcome r = ftbench(command + " --help");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("--log-level"), std::string::npos) << r.out;
  }
}

// Numbers in flags are decimal, as the spec's are: CLI11 would read "0x10" as 16 (`--rate 0x10`
// billed $16/h) and "0b11" or "0o7" likewise; each is refused, naming the flag,
// before the option's own range check. Every numeric option of every command goes through the
// same check (src/cli/app.cpp).
TEST(CliMessages, NumbersInFlagsAreDecimal) {
  const std::string report = "tests/fixtures/reports/h100-reference.json";
  const std::string cost = "cost " + report + " --rate 2 ";
  std::vector<std::pair<std::string, std::string>> cases = {
      {"--rate", "cost " + report + " --rate 0x10"},
      {"--rate", "cost " + report + " --rate 0X1p4"},
      {"--min-seconds", cost + "--min-seconds 0x10"},
      {"--min-seconds", cost + "--min-seconds 0b11"},
      {"--gpus", cost + "--gpus 0o7"},
      {"--energy-price", cost + "--energy-price 0x1"},
      {"--max-age-days", cost + "--max-age-days 0x7"},
      {"--alpha", "compare " + report + " " + report + " --rate 2 --alpha 0x0.1p0"},
      {"--rate", "compare " + report + " " + report + " --rate 2,0x10"},
  };
  if (fs::exists(fs::path(FTBENCH_BINARY).parent_path() / "ftbench-bin")) {
    const std::string run = "run configs/ci-tiny.yaml --set train.max_steps=1 ";
    cases.insert(cases.end(), {{"--rate", run + "--rate 0x10"},
                               {"--peak-tflops", run + "--peak-tflops 0x10"},
                               {"--stop-after-steps", run + "--stop-after-steps 0x2"}});
  }
  for (const auto& [option, args] : cases) {
    SCOPED_TRACE(args);
    const Outcome r = ftbench(args);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_NE(r.err.find(option + ": expected a decimal number, found "), std::string::npos)
        << r.err;
  }
  // Decimal forms are taken as before.
  EXPECT_EQ(ftbench("cost " + report + " --rate 2.5e0 --min-seconds 60 --gpus 1").exit_code, 0);
}

// Ranges say their bounds as numbers a reader can take in (not CLI11's 300 digits of the
// largest double), in ftbench's own words rather than CLI11's, which change between its
// versions ("not in range 0 to 9" in Debian 12's, "not in range [0 - 9]" in Debian 13's, a CI
// failure), and a peak too small to divide by is refused rather than printed as "MFU inf%".
// Every whole-number flag with bounds is here, below, above and between them.
TEST(CliMessages, RangesAreReadableAndPeaksDivisible) {
  const std::string report = "tests/fixtures/reports/h100-reference.json";
  const std::string other = "tests/fixtures/reports/mi300x-reference.json";
  const std::string gate = "gate " + report + " " + other + " --allow-different ";
  struct Bounded {
    std::string flag;
    std::string command;
    int64_t lo;
    int64_t hi;
  };
  std::vector<Bounded> flags = {
      {"--gpus", "cost " + report + " --rate 2", 1, 65536},
      {"--min-samples", gate, 3, int64_t{1} << 40},
      {"--last", gate, 1, int64_t{1} << 20},
      {"--min-seconds", gate + "--fail-on cost:+5% --rate 2", 0, 31622400},
      {"--min-seconds", "cost " + report + " --rate 2", 0, 31622400},
      {"--min-seconds", "compare " + report + " " + other + " --rate 2", 0, 31622400},
      {"--loss-skip-steps", "compare " + report + " " + other, 0, int64_t{1} << 40},
      {"--loss-window", "compare " + report + " " + other, 1, int64_t{1} << 40},
      {"--gpus", "plan configs/ci-tiny.yaml", 1, 4096},
      {"--max-gpus", "plan configs/ci-tiny.yaml", 1, 4096},
  };
  std::vector<std::pair<std::string, std::string>> cases;
  const bool torch_side = fs::exists(fs::path(FTBENCH_BINARY).parent_path() / "ftbench-bin");
  if (torch_side) {
    const std::string run = "run configs/ci-tiny.yaml --set train.max_steps=1";
    flags.insert(flags.end(), {{"--stop-after-steps", run, 1, 1000000},
                               {"--min-seconds", run + " --rate 2", 0, 31622400},
                               {"--nproc-per-node", run, 1, 1024},
                               {"--device-index", "gemm --quick", 0, 1023},
                               {"--threads", "gemm --quick", 0, 4096},
                               {"--warmup", "gemm --quick", 0, 100000},
                               {"--iterations", "gemm --quick", 1, 100000}});
    cases.push_back({run + " --peak-tflops 1e-320",
                     "--peak-tflops: expected a number from 0.001 to 1e+09, found 1e-320"});
  }
  for (const Bounded& b : flags) {
    const std::string range = b.flag + ": expected a whole number from " + std::to_string(b.lo) +
                              " to " + std::to_string(b.hi) + ", found ";
    for (const std::string& value : {std::to_string(b.lo - 1), std::to_string(b.hi + 1),
                                     std::string("2.5"), std::string("99999999999999999999")}) {
      cases.push_back({b.command + " " + b.flag + " " + value, range + value});
    }
  }
  for (const auto& [args, message] : cases) {
    SCOPED_TRACE(args);
    const Outcome r = ftbench(args);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err.rfind("error: " + message + "\n", 0), 0u) << r.err;
    EXPECT_LT(r.err.size(), 300u) << r.err;
  }
}

// CLI11 reads an empty value as the type's default (no price, a rate of 0, no output path):
// every option that takes a value refuses "" instead, naming itself. Each case is otherwise a
// command that would run, so nothing but the empty value can make it fail.
TEST(CliMessages, AnEmptyValueIsRefusedNotTakenAsTheDefault) {
  const std::string report = "tests/fixtures/reports/h100-reference.json";
  const std::string cost = "cost " + report + " --rate 2 ";
  const std::string compare = "compare " + report + " " + report + " --rate 2 ";
  std::vector<std::pair<std::string, std::string>> cases = {
      {"--log-level", "--log-level '' catalog"},
      {"--log-level", "catalog --log-level ''"},
      {"report", "cost '' --rate 2"},
      {"--rate", "cost " + report + " --rate ''"},
      {"--offer", "cost " + report + " --offer ''"},
      {"--billing", cost + "--billing ''"},
      {"--min-seconds", cost + "--min-seconds ''"},
      {"--gpus", cost + "--gpus ''"},
      {"--project-tokens", cost + "--project-tokens ''"},
      {"--project-examples", cost + "--project-examples ''"},
      {"--project-epochs", cost + "--project-epochs ''"},
      {"--energy-price", cost + "--energy-price ''"},
      {"--energy-price", cost + "--energy-price="},
      {"--catalog", cost + "--catalog ''"},
      {"--format", cost + "--format ''"},
      {"--color", cost + "--color ''"},
      {"--max-age-days", cost + "--max-age-days ''"},
      {"--today", cost + "--today ''"},
      {"reports", "compare '' " + report + " --rate 2"},
      {"--rate", "compare " + report + " " + report + " --rate ''"},
      {"--offer", compare + "--offer ''"},
      {"--billing", compare + "--billing ''"},
      {"--min-seconds", compare + "--min-seconds ''"},
      {"--loss-skip-steps", compare + "--loss-skip-steps ''"},
      {"--loss-window", compare + "--loss-window ''"},
      {"--alpha", compare + "--alpha ''"},
      {"--gpu", "catalog --gpu ''"},
      {"--provider", "catalog --provider ''"},
      {"--tier", "catalog --tier ''"},
      {"--tokenizer", "tokenize --tokenizer '' hello"},
      {"--file", "tokenize --file ''"},
      {"spec", "validate ''"},
      {"--set", "validate configs/ci-tiny.yaml --set ''"},
  };
  // ftbench-bin's commands, where the build has it.
  if (fs::exists(fs::path(FTBENCH_BINARY).parent_path() / "ftbench-bin")) {
    const std::string run = "run configs/ci-tiny.yaml --set train.max_steps=1 ";
    cases.insert(cases.end(),
                 {
                     {"spec", "run ''"},
                     {"--output", run + "-o ''"},
                     {"--t0", run + "--t0 ''"},
                     {"--peak-tflops", run + "--peak-tflops ''"},
                     {"--gemm", run + "--gemm ''"},
                     {"--resume", run + "--resume ''"},
                     {"--stop-after-steps", run + "--stop-after-steps ''"},
                     {"--set", run + "--set ''"},
                     {"--dtype", "gemm --quick --dtype ''"},
                     {"--device", "gemm --quick --device ''"},
                     {"--device-index", "gemm --quick --device-index ''"},
                     {"--threads", "gemm --quick --threads ''"},
                     {"--shapes", "gemm --quick --shapes ''"},
                     {"--warmup", "gemm --quick --warmup ''"},
                     {"--iterations", "gemm --quick --iterations ''"},
                     {"--max-seconds", "gemm --quick --max-seconds ''"},
                     {"--cache-flush-mib", "gemm --quick --cache-flush-mib ''"},
                     {"--output", "gemm --quick -o ''"},
                     {"--checkpoint", "logits --checkpoint '' --ids 1"},
                     {"--adapter", "logits --checkpoint x --adapter '' --ids 1"},
                     {"--ids", "logits --checkpoint x --ids ''"},
                     {"--dtype", "logits --checkpoint x --ids 1 --dtype ''"},
                     {"--device", "logits --checkpoint x --ids 1 --device ''"},
                     {"--device-index", "logits --checkpoint x --ids 1 --device-index ''"},
                     {"--threads", "logits --checkpoint x --ids 1 --threads ''"},
                     {"--output", "logits --checkpoint x --ids 1 -o ''"},
                 });
  }
  // Nothing after '=': CLI11 would take the next word as the value.
  cases.insert(cases.end(), {{"--rate", "cost " + report + " --rate= 2"},
                             {"--format", cost + "--format= json"},
                             {"--log-level", "--log-level= catalog"},
                             {"--today", cost + "--today="}});
  // The message says what was wrong, before the option's own range or list check (--gpus,
  // --color, --alpha, --loss-window, --log-level have one).
  for (const auto& [option, args] : cases) {
    SCOPED_TRACE(args);
    const Outcome r = ftbench(args);
    EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_NE(r.err.find(option + ": expected a value, found an empty string"), std::string::npos)
        << r.err;
  }
  // After "--" it is text, not an option.
  EXPECT_EQ(ftbench("tokenize --tokenizer byte -- --rate=").exit_code, 0);
  // Tokenize's text is the one value that may be empty: the empty text has no tokens.
  EXPECT_EQ(ftbench("tokenize --tokenizer byte ''").exit_code, 0);
}

TEST(CliMessages, TokenizeHelpNamesEveryTokenizer) {
  const Outcome r = ftbench("tokenize --help");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("tokenizer.json"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("SentencePiece .model"), std::string::npos) << r.out;
}

TEST(CliMessages, CompareHelpSaysItTakesTwoOrMoreReports) {
  const Outcome r = ftbench("compare --help");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("two or more reports"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("up to 26"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("x 2 "), std::string::npos) << r.out;
  // Three are compared (each against the first); a 27th has no label.
  const std::string report = " tests/fixtures/reports/h100-reference.json";
  std::string three = "compare";
  for (int i = 0; i < 3; ++i) three += report;
  EXPECT_EQ(ftbench(three + " --rate 2").exit_code, 0);
  std::string many = "compare";
  for (int i = 0; i < 27; ++i) many += report;
  const Outcome refused = ftbench(many + " --rate 2");
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("compare: at most 26 reports (labelled A to Z), found 27"),
            std::string::npos)
      << refused.err;
}

// CLI11's Range and PositiveNumber let "nan" through (every comparison with NaN is false): a
// significance level of NaN made every step test "not significant". Each number flag that had
// one of them refuses NaN and infinity, naming itself.
TEST(CliMessages, NumberFlagsRefuseNanAndInfinity) {
  const std::string a = "tests/fixtures/reports/h100-reference.json";
  const std::string b = "tests/fixtures/reports/mi300x-reference.json";
  std::vector<std::pair<std::string, std::string>> cases = {
      {"--alpha", "compare " + a + " " + b + " --alpha "},
      {"--alpha", "report " + a + " --alpha "},
      {"--alpha", "gate " + a + " " + b + " --allow-different --alpha "},
      {"--noise-sigmas", "gate " + a + " " + b + " --allow-different --noise-sigmas "},
      {"--rate", "gate " + a + " " + b + " --allow-different --fail-on cost:+5% --rate "}};
  if (fs::exists(fs::path(FTBENCH_BINARY).parent_path() / "ftbench-bin")) {
    cases.push_back({"--peak-tflops", "run configs/ci-tiny.yaml --peak-tflops "});
    cases.push_back({"--max-seconds", "gemm --max-seconds "});
    cases.push_back({"--cache-flush-mib", "gemm --cache-flush-mib "});
  }
  for (const auto& [flag, command] : cases) {
    for (const std::string value : {"nan", "inf"}) {
      SCOPED_TRACE(command + value);
      const Outcome r = ftbench(command + value);
      EXPECT_EQ(r.exit_code, 2) << r.err;
      EXPECT_NE(r.err.find(flag + ": expected a finite number, found " + value), std::string::npos)
          << r.err;
    }
  }
}

}  // namespace
