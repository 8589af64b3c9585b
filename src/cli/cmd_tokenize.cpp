// `ftbench tokenize --tokenizer T`: a text (or a file, line by line) through a tokenizer (byte,
// a tokenizer.json, a SentencePiece model), its token ids printed, as text or JSON: a tokenizer
// file checked before a run.
#include <fstream>
#include <iostream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "data/load_tokenizer.h"
#include "util/io/whole_file.h"

namespace ftbench::cli {
namespace {

struct TokenizeFlags {
  std::string tokenizer;
  std::string text;
  std::string file;
  bool lines = false;
  bool json = false;
};

std::string read_input_file(const std::string& path) {
  try {
    return io::read_whole_file(path, io::kTextFile);
  } catch (const io::FileReadError& e) {
    throw InputError(fmt::format("{}: cannot be read: {}", path, e.reason()));
  }
}

// Lines of `text` split on '\n' (a '\r' before it stays in the line); the empty piece after a
// final '\n' is not a line.
std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < text.size()) {
    const size_t end = text.find('\n', start);
    if (end == std::string_view::npos) {
      lines.push_back(text.substr(start));
      break;
    }
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

}  // namespace

Action add_tokenize_command(CLI::App& app) {
  auto flags = std::make_shared<TokenizeFlags>();
  CLI::App* cmd = add_subcommand(app, "tokenize");
  cmd->add_option("--tokenizer", flags->tokenizer,
                  "\"byte\", a Hugging Face tokenizer.json file or a folder holding one, or a "
                  "SentencePiece .model file")
      ->required();
  cmd->add_option("text", flags->text, "Text to tokenize (or --file)");
  cmd->add_option("--file", flags->file, "Read the text from this file (UTF-8)");
  cmd->add_flag("--lines", flags->lines,
                "With --file: tokenize each line on its own ('\\n' separates lines)");
  cmd->add_flag("--json", flags->json,
                "Print JSON: one object, or with --lines one object per input line");
  return [flags, cmd]() {
    const bool has_text = cmd->count("text") > 0;
    const bool has_file = !flags->file.empty();
    if (has_text == has_file) throw InputError("tokenize: give TEXT or --file (exactly one)");
    if (flags->lines && !has_file) throw InputError("tokenize: --lines needs --file");
    const auto tokenizer = data::load_tokenizer(flags->tokenizer);
    const std::string input = has_file ? read_input_file(flags->file) : flags->text;

    if (flags->lines) {
      int64_t total = 0;
      const std::vector<std::string_view> lines = split_lines(input);
      for (size_t i = 0; i < lines.size(); ++i) {
        std::vector<int32_t> ids;
        try {
          ids = tokenizer->encode(lines[i]);
        } catch (const data::TokenizerError& e) {
          throw data::TokenizerError(fmt::format("{} line {}: {}", flags->file, i + 1, e.what()));
        }
        total += static_cast<int64_t>(ids.size());
        if (flags->json) {
          nlohmann::ordered_json out;
          out["line"] = i + 1;
          out["count"] = ids.size();
          out["ids"] = ids;
          std::cout << out.dump() << "\n";
        } else {
          std::cout << fmt::format("{}\n", fmt::join(ids, " "));
        }
      }
      if (!flags->json) std::cout << total << " tokens\n";
      return kExitOk;
    }

    const std::vector<int32_t> ids = tokenizer->encode(input);
    if (flags->json) {
      nlohmann::ordered_json out;
      out["tokenizer"] = tokenizer->name();
      out["count"] = ids.size();
      out["ids"] = ids;
      std::cout << out.dump() << "\n";
    } else {
      std::cout << fmt::format("{}\n{} tokens\n", fmt::join(ids, " "), ids.size());
    }
    return kExitOk;
  };
}

}  // namespace ftbench::cli
