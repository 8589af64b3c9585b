// End to end: what `ftbench` says about its own command line: a mistyped subcommand gets a
// "did you mean", and every subcommand's --help lists what it takes (the torch-free `ftbench`).
#include <filesystem>
#include <string>

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
  std::vector<std::string> commands = {"validate", "cost",     "compare",
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

}  // namespace
