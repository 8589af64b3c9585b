#include "run/rerun.h"

#include <algorithm>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "report/report.h"
#include "spec/canonical.h"
#include "spec/choices.h"
#include "spec/spec_error.h"
#include "spec/spec_loader.h"
#include "train/checkpoint_files.h"
#include "util/io/sha256.h"

namespace ftbench::run {
namespace {

namespace fs = std::filesystem;

report::FileRead describe_file(const std::string& key, const fs::path& path) {
  std::error_code ec;
  const fs::path absolute = fs::absolute(path, ec).lexically_normal();
  const auto bytes = fs::file_size(absolute, ec);
  return {key, absolute.string(), ec ? 0 : static_cast<int64_t>(bytes),
          io::sha256_of_file(absolute.string())};
}

bool is_tokenizer_file(const std::string& tokenizer) {
  return tokenizer != spec::choice::tokenizer::kByte &&
         tokenizer != spec::choice::tokenizer::kNone && !tokenizer.empty();
}

void check_file(const report::InputFile& f, const std::string& source) {
  std::error_code ec;
  if (!fs::is_regular_file(f.path, ec)) {
    throw RerunError(fmt::format("{}: {} {}: no such file here; the report's run read it there",
                                 source, f.key, f.path));
  }
  const auto bytes = static_cast<int64_t>(fs::file_size(f.path, ec));
  const std::string digest = bytes == f.bytes ? io::sha256_of_file(f.path) : std::string();
  if (bytes != f.bytes || digest != f.sha256) {
    throw RerunError(fmt::format(
        "{}: {} {}: not the file the report's run read ({} bytes, SHA-256 {}; the run read {} "
        "bytes, SHA-256 {}): a run on it would not be the same job",
        source, f.key, f.path, bytes, digest.empty() ? "not computed" : digest.substr(0, 16),
        f.bytes, f.sha256.substr(0, 16)));
  }
}

}  // namespace

std::vector<report::FileRead> input_files(const spec::RunSpec& spec) {
  std::vector<report::FileRead> out;
  if (spec.data.source == spec::choice::data_source::kFile) {
    out.push_back(describe_file("data.path", spec.data.path));
    if (!spec.data.validation_path.empty()) {
      out.push_back(describe_file("data.validation_path", spec.data.validation_path));
    }
  }
  if (is_tokenizer_file(spec.data.tokenizer)) {
    std::error_code ec;
    fs::path file = spec.data.tokenizer;
    if (fs::is_directory(file, ec)) file /= "tokenizer.json";
    out.push_back(describe_file("data.tokenizer", file));
    const fs::path config = file.parent_path() / "tokenizer_config.json";
    if (file.filename() == "tokenizer.json" && fs::is_regular_file(config, ec)) {
      out.push_back(describe_file("data.tokenizer", config));
    }
  }
  return out;
}

namespace {

// An output path of the first run's spec as the re-run takes it: relative to the current folder,
// never outside it (what the first run wrote through "/abs/x" or "../x" is not the re-run's).
std::string output_here(const std::string& key, const std::string& text,
                        const std::string& source) {
  const fs::path p = fs::path(text).lexically_normal();
  const bool leaves = p.is_absolute() || (!p.empty() && *p.begin() == "..");
  if (!leaves) return text;
  fs::path name = p.filename();
  if (name.empty()) name = p.parent_path().filename();
  if (name.empty() || name == "." || name == "..") {
    throw RerunError(fmt::format("{}: its {} {} leaves no name for a path in the current folder",
                                 source, key, text));
  }
  return name.string();
}

std::string expand_name(std::string text, const std::string& name) {
  const std::string tag = "{name}";
  for (std::size_t at = text.find(tag); at != std::string::npos; at = text.find(tag, at)) {
    text.replace(at, tag.size(), name);
    at += name.size();
  }
  return text;
}

}  // namespace

spec::RunSpec spec_from_report(const report::Report& report, const std::string& source,
                               bool report_path_given) {
  if (report.working_directory.empty()) {
    throw RerunError(fmt::format(
        "{}: the report does not record the folder its run started in (schema {}; ftbench "
        "records it since ftbench.report/1.11), so its relative paths cannot be found: run its "
        "spec from that folder instead",
        source, report.schema));
  }
  nlohmann::ordered_json spec = report.spec;
  spec.erase("source_path");
  const fs::path base = report.working_directory;
  for (const auto& [section, key] : kPathKeys) {
    if (!spec.contains(section) || !spec[section].contains(key)) continue;
    nlohmann::ordered_json& value = spec[section][key];
    if (!value.is_string() || value.get<std::string>().empty()) continue;
    const std::string text = value.get<std::string>();
    if (std::string(key) == "tokenizer" && !is_tokenizer_file(text)) continue;
    if (fs::path(text).is_relative()) value = (base / text).lexically_normal().string();
  }
  // What the first run wrote is never in the re-run's way.
  const std::string name = spec.contains("output") && spec["output"].contains("name") &&
                                   spec["output"]["name"].is_string()
                               ? spec["output"]["name"].get<std::string>()
                               : std::string();
  std::error_code cwd_error;
  const fs::path here = fs::current_path(cwd_error);
  for (const char* pointer : kOutputKeys) {
    const nlohmann::ordered_json::json_pointer at(pointer);
    if (!spec.contains(at) || !spec[at].is_string() || spec[at].get<std::string>().empty()) {
      continue;
    }
    std::string key = std::string(pointer).substr(1);
    std::replace(key.begin(), key.end(), '/', '.');
    const std::string first = spec[at].get<std::string>();
    const std::string again = output_here(key, first, source);
    spec[at] = again;
    if (key == "output.report" && report_path_given) continue;
    const fs::path first_place = (fs::path(first).is_absolute() ? fs::path(expand_name(first, name))
                                                                : base / expand_name(first, name))
                                     .lexically_normal();
    const fs::path again_place = (here / expand_name(again, name)).lexically_normal();
    std::error_code ec;
    if (!cwd_error && first_place == again_place &&
        fs::exists(fs::symlink_status(first_place, ec))) {
      throw RerunError(fmt::format(
          "{}: its {} {} is where the first run wrote ({}); a re-run writes relative to the "
          "current folder and never over the first run's: run it from another folder",
          source, key, first, first_place.string()));
    }
  }
  spec::RunSpec out;
  try {
    out = spec::load_spec_from_string(spec.dump(), source + " (its spec)");
  } catch (const spec::SpecError& e) {
    throw RerunError(fmt::format("{}: its spec does not load as this ftbench reads specs: {}",
                                 source, e.what()));
  }
  if (report.data) {
    for (const report::InputFile& f : report.data->files) check_file(f, source);
    // The files the spec reads here are the ones recorded (a hand-edited working directory or
    // path would read others).
    const std::vector<report::FileRead> here = input_files(out);
    const std::vector<report::InputFile>& read = report.data->files;
    for (std::size_t i = 0; i < std::max(here.size(), read.size()); ++i) {
      if (i < here.size() && i < read.size() && here[i].key == read[i].key &&
          here[i].path == read[i].path && here[i].sha256 == read[i].sha256) {
        continue;
      }
      throw RerunError(
          fmt::format("{}: {} reads {} here, but the report's run read {}: not the same job",
                      source, i < here.size() ? here[i].key : read[i].key,
                      i < here.size() ? here[i].path : std::string("nothing"),
                      i < read.size() ? read[i].path : std::string("nothing")));
    }
  }
  const std::string fingerprint = spec::fingerprint(out);
  if (fingerprint != report.spec_fingerprint) {
    throw RerunError(fmt::format(
        "{}: its spec has fingerprint {} here, the report's run {}: this ftbench reads the spec "
        "as another job (a different version?), so the run would not be the same job",
        source, fingerprint.substr(0, 12), report.spec_fingerprint.substr(0, 12)));
  }
  return out;
}

}  // namespace ftbench::run
