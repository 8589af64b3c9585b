#include "run/outputs.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include <fmt/format.h>

#include "report/report_io.h"
#include "report/run_status.h"
#include "util/io/output_file.h"

namespace ftbench::run {
namespace {

std::string with_name(std::string path, const std::string& name) {
  const std::string key = "{name}";
  for (size_t pos = path.find(key); pos != std::string::npos; pos = path.find(key)) {
    path.replace(pos, key.size(), name);
  }
  return path;
}

}  // namespace

std::string default_report_path(const spec::RunSpec& spec) {
  return with_name(spec.output.report, spec.output.name);
}

std::string mllog_path(const spec::RunSpec& spec) {
  return with_name(spec.output.mllog, spec.output.name);
}

std::string checkpoint_dir(const spec::RunSpec& spec) {
  return with_name(spec.train.checkpoint.dir, spec.output.name);
}

std::string adapter_export_dir(const spec::RunSpec& spec) {
  return with_name(spec.output.adapter, spec.output.name);
}

std::string merged_export_dir(const spec::RunSpec& spec) {
  return with_name(spec.output.merged, spec.output.name);
}

void check_export_writable(const std::string& dir, const char* key, bool force) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::file_status status = fs::symlink_status(dir, ec);
  if (fs::exists(status) && !force) {
    throw io::FileExistsError(fmt::format(
        "{}: exists ({}); pass --force to replace it, or choose another folder", dir, key));
  }
  // --force replaces an earlier export of the same kind, or an empty folder: never a file (a
  // report, a spec), a link, or a folder of other work, whose contents the export would take
  // away (util/io/output_rules.h).
  if (fs::exists(status)) {
    const bool adapter = std::string(key) == "output.adapter";
    const char* marker = adapter ? "adapter_config.json" : "config.json";
    const char* kind = adapter ? "an exported adapter" : "an exported merged model";
    std::string problem;
    if (!fs::is_directory(status)) {
      problem = fs::is_symlink(status) ? "a symbolic link" : "a file, not a folder";
    } else if (!fs::is_empty(dir, ec)) {
      if (!fs::is_regular_file(fs::path(dir) / marker, ec)) {
        problem = fmt::format("a folder without {}: not {}", marker, kind);
      }
      for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
        if (problem.empty() && !e.is_regular_file(ec)) {
          problem = fmt::format("a folder holding {}, which {} does not",
                                e.path().filename().string(), kind);
        }
      }
    }
    if (!problem.empty()) {
      throw io::OutputRefused(fmt::format(
          "{} ({}): {}; even --force replaces only {} (or an empty folder): choose another "
          "folder",
          dir, key, problem, kind));
    }
  }
  const fs::path target = fs::path(dir).lexically_normal();
  const fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
  fs::create_directories(folder, ec);
  if (ec) {
    throw io::FileWriteError(fmt::format("cannot write {} ({}): cannot create folder {}: {}", dir,
                                         key, folder.string(), ec.message()));
  }
  const fs::path probe =
      folder / fmt::format(".{}.probe-{}", target.filename().string(), ::getpid());
  if (::mkdir(probe.c_str(), 0700) != 0) {
    throw io::FileWriteError(fmt::format("cannot write {} ({}): {}: {}", dir, key, folder.string(),
                                         std::strerror(errno)));
  }
  ::rmdir(probe.c_str());
}

std::string folder_not_writable(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path folder = fs::absolute(dir, ec).lexically_normal();
  while (!folder.empty() && !fs::exists(folder, ec) && folder != folder.root_path()) {
    folder = folder.parent_path();
  }
  if (!fs::is_directory(folder, ec)) return folder.string() + " is not a folder";
  if (::access(folder.c_str(), W_OK | X_OK) != 0) {
    return fmt::format("{}: {}", folder.string(), std::strerror(errno));
  }
  return "";
}

void check_folder_writable(const std::string& dir, const char* key) {
  const std::string probe = (std::filesystem::path(dir) / fmt::format(".probe-{}", ::getpid()));
  if (::mkdir(probe.c_str(), 0700) != 0) {
    throw io::FileWriteError(
        fmt::format("cannot write {} ({}): {}", dir, key, std::strerror(errno)));
  }
  ::rmdir(probe.c_str());
}

std::optional<report::Report> existing_report(const std::string& path) {
  std::error_code ec;
  // Only a regular file can be a report; opening a FIFO there would wait for a writer.
  if (!std::filesystem::is_regular_file(path, ec)) return std::nullopt;
  try {
    return report::read_report(path);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

bool may_replace_report(const std::optional<report::Report>& old, const std::string& fingerprint) {
  return old && old->spec_fingerprint == fingerprint && old->status != report::status::kCompleted;
}

std::vector<io::NamedPath> spec_input_files(const spec::RunSpec& spec) {
  std::vector<io::NamedPath> out = {{"the spec file", spec.source_path},
                                    {"data.path", spec.data.path},
                                    {"data.validation_path", spec.data.validation_path}};
  std::error_code ec;
  if (std::filesystem::is_regular_file(spec.data.tokenizer, ec)) {
    out.push_back({"data.tokenizer", spec.data.tokenizer});
    out.push_back(
        {"data.tokenizer's tokenizer_config.json",
         (std::filesystem::path(spec.data.tokenizer).parent_path() / "tokenizer_config.json")
             .string()});
  }
  return out;
}

}  // namespace ftbench::run
