#include "train/checkpoint_files.h"
#include "util/io/output_file.h"
#include "util/io/remove_tree.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <utility>

#include <fmt/format.h>

#include "spec/canonical.h"
#include "train/oom_fallback.h"
#include "util/io/sha256.h"
#include "util/io/whole_file.h"
#include "util/text/json_fields.h"
#include "util/text/json_parse.h"
#include "util/text/json_values.h"
#include "util/text/messages.h"

namespace ftbench::train {
namespace fs = std::filesystem;
namespace {

// A checkpoint file's SHA-256; CheckpointError when it cannot be read.
std::string digest_of_checkpoint_file(const std::string& path) {
  try {
    return io::sha256_of_file(path);
  } catch (const io::FileReadError& e) {
    throw CheckpointError(e.what());
  }
}

using Json = nlohmann::json;
using OJson = nlohmann::ordered_json;

// "<64 hex digits>  checkpoint.json\n".
constexpr io::FileKind kChecksumFile{"checksum file", 4096};

class ManifestReader : public text::JsonFields<Json, CheckpointError> {
 public:
  using JsonFields::JsonFields;

  int64_t count(const Json& obj, const std::string& parent, const char* key) const {
    const Json& v = field(obj, parent, key);
    if (!v.is_number_integer() || v.get<int64_t>() < 0) {
      wrong_type(join(parent, key), "an integer >= 0", v);
    }
    return v.get<int64_t>();
  }
  double number(const Json& obj, const std::string& parent, const char* key) const {
    const Json& v = field(obj, parent, key);
    if (!v.is_number()) wrong_type(join(parent, key), "a number", v);
    return v.get<double>();
  }
};

// "step-" followed by digits only: the step, else nullopt.
std::optional<int64_t> step_of_folder(const std::string& name) {
  constexpr std::string_view kPrefix = "step-";
  if (name.size() <= kPrefix.size() || name.compare(0, kPrefix.size(), kPrefix) != 0) {
    return std::nullopt;
  }
  int64_t step = 0;
  for (size_t i = kPrefix.size(); i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || step > (INT64_MAX - 9) / 10) return std::nullopt;
    step = step * 10 + (name[i] - '0');
  }
  return step;
}

void sync_path(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

// Swaps two folders in one atomic step; false where the filesystem cannot (then nothing moved).
bool exchange_folders(const fs::path& a, const fs::path& b) {
#ifdef RENAME_EXCHANGE
  return ::renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) == 0;
#else
  (void)a;
  (void)b;
  return false;
#endif
}

// Writes `text` to `path` and fsyncs it; the errno text on failure.
void write_text_file(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw CheckpointWriteError(path + ": cannot create: " + std::strerror(errno));
  if (!io::write_all(fd, text, "checkpoint")) {
    const int error = errno;
    ::close(fd);
    throw CheckpointWriteError(path + ": cannot write: " + std::strerror(error));
  }
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    throw CheckpointWriteError(path + ": cannot write (fsync/close): " + std::strerror(errno));
  }
}

// Hidden folders of a save: ".step-00000010.tmp-<pid>" (being written), ".step-00000010.old-<pid>"
// (an earlier copy moved aside); `tag` is ".tmp-" or ".old-".
std::optional<pid_t> temp_folder_pid(const std::string& name, const char* tag) {
  const size_t at = name.rfind(tag);
  if (name.size() < 7 || name.compare(0, 6, ".step-") != 0 || at == std::string::npos) {
    return std::nullopt;
  }
  const std::string digits = name.substr(at + 5);
  if (digits.empty() || !std::all_of(digits.begin(), digits.end(), ::isdigit) ||
      digits.size() > 9) {
    return std::nullopt;
  }
  return static_cast<pid_t>(std::stol(digits));
}

void flatten(const Json& j, const std::string& prefix,
             std::vector<std::pair<std::string, Json>>& out) {
  if (j.is_object() && !j.empty()) {
    for (const auto& [key, value] : j.items()) {
      flatten(value, prefix.empty() ? key : prefix + "." + key, out);
    }
    return;
  }
  out.emplace_back(prefix, j);
}

// Creates the checkpoint folder `dir` (and its parents) or throws "`what`: cannot create the
// folder: why".
void create_checkpoint_dir(const std::string& dir, const std::string& what) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw CheckpointWriteError(what + ": cannot create the folder: " + ec.message());
}

}  // namespace

OJson to_json(const CheckpointManifest& m) {
  OJson j = OJson::object();
  FTBENCH_JSON_MEMBERS(j, m, format, created_at_utc, reason, ftbench_version, spec_fingerprint,
                       data_fingerprint);
  j["position"] = {{"step", m.step},
                   {"epoch", m.epoch},
                   {"micro_batches_done", m.micro_batches_done},
                   {"micro_batch_size", m.micro_batch_size},
                   {"grad_accum_steps", m.grad_accum_steps}};
  j["device_type"] = m.device_type;
  j["optimizer"] = {{"name", "adamw"},
                    {"implementation", m.optimizer_implementation},
                    {"parameters", m.parameters},
                    {"parameter_steps", m.parameter_steps}};
  j["loss_scaler"] = {{"enabled", m.loss_scaler_enabled},
                      {"scale", m.loss_scale},
                      {"clean_steps", m.loss_scale_clean_steps}};
  j["rng"] = {{"cpu", "rng.cpu"}, {"device", m.has_device_rng ? OJson("rng.device") : OJson()}};
  j["tensors"] = {
      {"file", kCheckpointTensors}, {"bytes", m.tensors_bytes}, {"sha256", m.tensors_sha256}};
  j["step_flops"] = m.step_flops;
  j["spec"] = m.spec;
  j["report"] = m.report;
  return j;
}

CheckpointManifest manifest_from_json(const Json& j, const std::string& source) {
  const ManifestReader r(source);
  if (!j.is_object()) r.fail("expected a JSON object, found " + std::string(j.type_name()));
  CheckpointManifest m;
  m.format = r.string(j, "", "format");
  if (m.format != kCheckpointFormat) {
    r.fail(
        fmt::format("format: expected \"{}\", found \"{}\" (written by another version of "
                    "ftbench?)",
                    kCheckpointFormat, m.format));
  }
  m.created_at_utc = r.string(j, "", "created_at_utc");
  m.reason = r.string(j, "", "reason");
  m.ftbench_version = r.string(j, "", "ftbench_version");
  m.spec_fingerprint = r.string(j, "", "spec_fingerprint");
  m.data_fingerprint = r.string(j, "", "data_fingerprint");
  const Json& position = r.object(j, "", "position");
  m.step = r.count(position, "position", "step");
  m.epoch = r.count(position, "position", "epoch");
  m.micro_batches_done = r.count(position, "position", "micro_batches_done");
  m.micro_batch_size = r.count(position, "position", "micro_batch_size");
  m.grad_accum_steps = r.count(position, "position", "grad_accum_steps");
  if (m.step < 1 || m.micro_batch_size < 1 || m.grad_accum_steps < 1) {
    r.fail("position: step, micro_batch_size and grad_accum_steps must be >= 1");
  }
  m.device_type = r.string(j, "", "device_type");
  const Json& optimizer = r.object(j, "", "optimizer");
  m.optimizer_implementation = r.string(optimizer, "optimizer", "implementation");
  const Json& names = r.array(optimizer, "optimizer", "parameters");
  const Json& steps = r.array(optimizer, "optimizer", "parameter_steps");
  if (names.size() != steps.size()) {
    r.fail(
        fmt::format("optimizer: {} parameters but {} parameter_steps", names.size(), steps.size()));
  }
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string path = r.index("optimizer.parameters", i);
    if (!names[i].is_string()) r.wrong_type(path, "a string", names[i]);
    m.parameters.push_back(names[i].get<std::string>());
    if (!steps[i].is_number_integer() || steps[i].get<int64_t>() < 0) {
      r.wrong_type(r.index("optimizer.parameter_steps", i), "an integer >= 0", steps[i]);
    }
    m.parameter_steps.push_back(steps[i].get<int64_t>());
  }
  const Json& scaler = r.object(j, "", "loss_scaler");
  m.loss_scaler_enabled = r.boolean(scaler, "loss_scaler", "enabled");
  m.loss_scale = r.number(scaler, "loss_scaler", "scale");
  if (!(m.loss_scale > 0.0)) r.fail("loss_scaler.scale: expected a number > 0");
  m.loss_scale_clean_steps = r.count(scaler, "loss_scaler", "clean_steps");
  const Json& rng = r.object(j, "", "rng");
  m.has_device_rng = !r.field(rng, "rng", "device").is_null();
  const Json& tensors = r.object(j, "", "tensors");
  m.tensors_bytes = r.count(tensors, "tensors", "bytes");
  m.tensors_sha256 = r.string(tensors, "tensors", "sha256");
  const Json& flops = r.array(j, "", "step_flops");
  for (size_t i = 0; i < flops.size(); ++i) {
    const std::string path = r.index("step_flops", i);
    // Four numbers before the executed count (ftbench.report/1.12), five since.
    if (!flops[i].is_array() || flops[i].size() < 4 || flops[i].size() > 5) {
      r.wrong_type(path, "4 or 5 numbers", flops[i]);
    }
    std::vector<double> counts;
    for (const Json& f : flops[i]) {
      if (!f.is_number()) r.wrong_type(path, "4 or 5 numbers", flops[i]);
      counts.push_back(f.get<double>());
    }
    m.step_flops.push_back(std::move(counts));
  }
  if (static_cast<int64_t>(m.step_flops.size()) != m.step) {
    r.fail(fmt::format("step_flops: {} entries for {} steps", m.step_flops.size(), m.step));
  }
  m.spec = r.object(j, "", "spec");
  m.report = r.object(j, "", "report");
  return m;
}

CheckpointManifest parse_manifest(std::string_view text, const std::string& source) {
  return manifest_from_json(parse_checkpoint_json(text, source, "not a checkpoint manifest: "),
                            source);
}

CheckpointManifest read_manifest(const std::string& folder) {
  const std::string path = (fs::path(folder) / kCheckpointManifest).string();
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) {
    throw CheckpointError(folder + ": not a checkpoint (no " + kCheckpointManifest + ")");
  }
  std::string text;
  std::string checksum;
  const std::string checksum_path = (fs::path(folder) / kCheckpointManifestChecksum).string();
  try {
    text = io::read_whole_file(path, io::kCheckpointManifestFile);
    if (!fs::exists(checksum_path, ec)) {
      throw CheckpointError(
          fmt::format("{}: no {} (saved by an earlier ftbench, or not a "
                      "complete checkpoint): the manifest cannot be checked",
                      folder, kCheckpointManifestChecksum));
    }
    checksum = io::read_whole_file(checksum_path, kChecksumFile);
  } catch (const io::FileReadError& e) {
    throw CheckpointError(e.path() + ": cannot read: " + e.reason());
  }
  const std::string want = checksum.substr(0, checksum.find_first_of(" \t\n"));
  const std::string have = io::sha256_hex(text);
  if (want != have) {
    throw CheckpointError(fmt::format(
        "{}: SHA-256 {} differs from the {} recorded in {} (the manifest was edited or "
        "corrupted): resuming from it could continue another position, split or optimizer state",
        path, have, text::quoted(want.substr(0, 64)), kCheckpointManifestChecksum));
  }
  return parse_manifest(text, path);
}

std::string checkpoint_folder_name(int64_t step) { return fmt::format("step-{:08d}", step); }

std::vector<std::string> list_checkpoints(const std::string& dir) {
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) return {};
  for (const fs::directory_entry& entry : it) {
    const std::optional<int64_t> step = step_of_folder(entry.path().filename().string());
    if (!step || !entry.is_directory(ec)) continue;
    if (!fs::is_regular_file(entry.path() / kCheckpointManifest, ec)) continue;
    found.emplace_back(*step, entry.path().string());
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& [step, path] : found) out.push_back(std::move(path));
  return out;
}

std::vector<std::string> list_incomplete_checkpoints(const std::string& dir) {
  std::vector<std::pair<int64_t, std::string>> found;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    const std::optional<int64_t> step = step_of_folder(entry.path().filename().string());
    if (!step || fs::is_regular_file(entry.path() / kCheckpointManifest, ec)) continue;
    found.emplace_back(*step, entry.path().string());
  }
  std::sort(found.begin(), found.end());
  std::vector<std::string> out;
  for (auto& [step, path] : found) out.push_back(std::move(path));
  return out;
}

std::optional<int64_t> step_of_checkpoint_folder(const std::string& folder) {
  return step_of_folder(fs::path(folder).lexically_normal().filename().string());
}

std::string resolve_checkpoint(const std::string& path_or_dir) {
  std::error_code ec;
  if (!fs::is_directory(path_or_dir, ec)) {
    throw CheckpointError(path_or_dir + ": no such checkpoint folder");
  }
  if (fs::exists(fs::path(path_or_dir) / kCheckpointManifest, ec)) return path_or_dir;
  const std::vector<std::string> all = list_checkpoints(path_or_dir);
  if (all.empty()) {
    throw CheckpointError(path_or_dir + ": no checkpoint in it (no step-*/" + kCheckpointManifest +
                          ")");
  }
  return all.back();
}

void verify_checkpoint_tensors(const std::string& folder, const CheckpointManifest& m) {
  const std::string path = (fs::path(folder) / kCheckpointTensors).string();
  std::error_code ec;
  if (fs::exists(path, ec) && !fs::is_regular_file(path, ec)) {
    throw CheckpointError(path + ": not a regular file (a checkpoint's tensors are one)");
  }
  const auto bytes = fs::file_size(path, ec);
  if (ec) throw CheckpointError(path + ": cannot read: " + ec.message());
  if (static_cast<int64_t>(bytes) != m.tensors_bytes) {
    throw CheckpointError(fmt::format("{}: {} bytes, the manifest says {} (truncated or replaced)",
                                      path, bytes, m.tensors_bytes));
  }
  const std::string sha = digest_of_checkpoint_file(path);
  if (sha != m.tensors_sha256) {
    throw CheckpointError(
        fmt::format("{}: SHA-256 {} differs from the manifest's {} (the file "
                    "is corrupted)",
                    path, sha, m.tensors_sha256));
  }
}

SavedCheckpointFolder save_checkpoint_folder(
    const std::string& dir, CheckpointManifest manifest, int64_t keep_last,
    const std::function<void(const std::string&)>& write_tensors,
    const std::function<void(CheckpointManifest&)>& before_manifest) {
  const std::string name = checkpoint_folder_name(manifest.step);
  const fs::path final_path = fs::path(dir) / name;
  const fs::path temp = fs::path(dir) / fmt::format(".{}.tmp-{}", name, ::getpid());
  create_checkpoint_dir(dir, "cannot save a checkpoint in " + dir);
  std::error_code ec;
  io::remove_tree(temp, ec);
  SavedCheckpointFolder saved;
  saved.path = final_path.string();
  try {
    if (!fs::create_directory(temp, ec) || ec) {
      throw CheckpointWriteError(
          fmt::format("{}: cannot create: {}", temp.string(), ec ? ec.message() : "it exists"));
    }
    const std::string tensors = (temp / kCheckpointTensors).string();
    write_tensors(tensors);
    manifest.tensors_bytes = static_cast<int64_t>(fs::file_size(tensors));
    manifest.tensors_sha256 = digest_of_checkpoint_file(tensors);
    if (before_manifest) before_manifest(manifest);
    const std::string text = to_json(manifest).dump(1) + "\n";
    write_text_file((temp / kCheckpointManifest).string(), text);
    write_text_file((temp / kCheckpointManifestChecksum).string(),
                    io::sha256_hex(text) + "  " + kCheckpointManifest + "\n");
    sync_path(temp);
    saved.bytes = manifest.tensors_bytes;
    // A save of a step that is already there (a run interrupted right after resuming) replaces
    // it. rename() cannot replace a non-empty folder: the two are exchanged atomically
    // (RENAME_EXCHANGE), so that a complete copy of the step is in place at every instant, and
    // the old one, now in the temporary folder, is removed. Where the filesystem cannot exchange,
    // the old one is moved aside first; a kill between the two renames leaves it there, and
    // clean_checkpoint_leftovers() puts it back at the next start.
    const bool replacing = fs::exists(final_path, ec);
    if (replacing && exchange_folders(temp, final_path)) {
      io::remove_tree(temp, ec);
    } else {
      const fs::path aside = fs::path(dir) / fmt::format(".{}.old-{}", name, ::getpid());
      if (replacing) fs::rename(final_path, aside);
      if (::rename(temp.c_str(), final_path.c_str()) != 0) {
        const int error = errno;
        if (replacing) fs::rename(aside, final_path, ec);
        throw CheckpointWriteError(fmt::format("{}: cannot rename into place: {}",
                                               final_path.string(), std::strerror(error)));
      }
      if (replacing) io::remove_tree(aside, ec);
    }
    sync_path(dir);
  } catch (const CheckpointWriteError&) {
    io::remove_tree(temp, ec);
    throw;
  } catch (const std::exception& e) {
    io::remove_tree(temp, ec);
    throw CheckpointWriteError(
        fmt::format("cannot save checkpoint {}: {}", final_path.string(), e.what()));
  }

  // Pruning and clean-up are best effort: the new checkpoint is complete either way.
  std::vector<std::string> all = list_checkpoints(dir);
  for (size_t i = 0; i + static_cast<size_t>(keep_last) < all.size(); ++i) {
    io::remove_tree(all[i], ec);
  }
  clean_checkpoint_leftovers(dir);
  return saved;
}

CheckpointDirLock::CheckpointDirLock(const std::string& dir) : dir_(dir) {
  create_checkpoint_dir(dir, "cannot use " + dir + " for checkpoints");
  std::error_code ec;
  fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd_ < 0) {
    throw CheckpointWriteError(
        fmt::format("cannot use {} for checkpoints: {}", dir, std::strerror(errno)));
  }
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    ::close(fd_);
    fd_ = -1;
    if (error == EWOULDBLOCK) {
      throw CheckpointError(fmt::format(
          "{}: in use by another ftbench run (it holds the folder's lock): two runs writing "
          "checkpoints into one folder would replace each other's; wait for it to end, or give "
          "this run a folder of its own (train.checkpoint.dir)",
          dir));
    }
    throw CheckpointWriteError(
        fmt::format("cannot lock {} for checkpoints: {}", dir, std::strerror(error)));
  }
}

CheckpointDirLock::~CheckpointDirLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the lock
}

std::vector<std::string> clean_checkpoint_leftovers(const std::string& dir) {
  std::vector<std::string> cleaned;
  std::error_code ec;
  for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (const std::optional<pid_t> pid = temp_folder_pid(name, ".tmp-")) {
      // Only this process writes here (it holds the folder's lock), and not now: whoever left it
      // died mid-save (a process of the same pid in an earlier container too).
      io::remove_tree(entry.path(), ec);
      cleaned.push_back(name + " (an unfinished save, removed)");
    } else if (temp_folder_pid(name, ".old-")) {
      // ".step-00000010.old-PID": the complete earlier copy of step-00000010.
      const std::string step = name.substr(1, name.rfind(".old-") - 1);
      const fs::path in_place = fs::path(dir) / step;
      if (fs::is_regular_file(in_place / kCheckpointManifest, ec)) {
        io::remove_tree(entry.path(), ec);
        cleaned.push_back(name + " (replaced by " + step + ", removed)");
      } else {
        io::remove_tree(in_place, ec);
        fs::rename(entry.path(), in_place, ec);
        cleaned.push_back(name + " (put back as " + step + ")");
      }
    }
  }
  // The journal's temporary file, left by a process ended at once while it wrote the journal.
  for (const std::string& left :
       io::remove_stale_temporary_files((fs::path(dir) / kSegmentJournal).string())) {
    cleaned.push_back(fs::path(left).filename().string() + " (an unfinished write of " +
                      kSegmentJournal + ", removed)");
  }
  if (!cleaned.empty()) sync_path(dir);
  return cleaned;
}

void check_resume_split(const std::string& folder, const CheckpointManifest& m,
                        int64_t micro_batch_size, int64_t grad_accum_steps, bool oom_fallback,
                        int64_t oom_max_fallbacks) {
  const MicroBatching saved{m.micro_batch_size, m.grad_accum_steps};
  MicroBatching split{micro_batch_size, grad_accum_steps};
  const auto refuse = [&](const std::string& why) {
    throw CheckpointError(fmt::format(
        "{}: saved at micro-batch {} x grad_accum_steps {}; this spec runs {} x {}: {}", folder,
        saved.micro_batch_size, saved.grad_accum_steps, micro_batch_size, grad_accum_steps, why));
  };
  if (saved.effective_batch() != split.effective_batch()) {
    refuse(fmt::format("another effective batch ({} vs {}), so another job",
                       saved.effective_batch(), split.effective_batch()));
  }
  bool reachable = saved.micro_batch_size == split.micro_batch_size;
  for (int64_t i = 0; !reachable && oom_fallback && i < oom_max_fallbacks; ++i) {
    const std::optional<MicroBatching> next = fallback_micro_batching(split);
    if (!next) break;
    split = *next;
    reachable = saved.micro_batch_size == split.micro_batch_size &&
                saved.grad_accum_steps == split.grad_accum_steps;
  }
  if (!reachable) {
    refuse(oom_fallback ? "not a split its out-of-memory fallback reaches (train.oom_fallback)"
                        : "a split this spec cannot take (train.oom_fallback is off)");
  }
  if (m.micro_batches_done != m.step * m.grad_accum_steps) {
    throw CheckpointError(fmt::format("{}: position: {} micro-batches done for {} steps of {}",
                                      folder, m.micro_batches_done, m.step, m.grad_accum_steps));
  }
}

nlohmann::json parse_checkpoint_json(std::string_view text, const std::string& source,
                                     const char* what) {
  return text::parse_json_text<nlohmann::json>(text, [&](const text::JsonTextError& e) {
    using Kind = text::JsonTextError::Kind;
    throw CheckpointError(source + ": " +
                          (e.kind == Kind::kTooDeep        ? what
                           : e.kind == Kind::kDuplicateKey ? ""
                                                           : "not valid JSON (truncated or "
                                                             "corrupted?): ") +
                          e.reason);
  });
}

std::vector<std::string> differing_keys(const Json& a, const Json& b) {
  std::vector<std::pair<std::string, Json>> fa;
  std::vector<std::pair<std::string, Json>> fb;
  flatten(a, "", fa);
  flatten(b, "", fb);
  std::map<std::string, Json> mb(fb.begin(), fb.end());
  std::vector<std::string> out;
  for (const auto& [key, value] : fa) {
    const auto it = mb.find(key);
    if (it == mb.end() || it->second != value) out.push_back(key);
    if (it != mb.end()) mb.erase(it);
  }
  for (const auto& [key, value] : mb) out.push_back(key);
  return out;
}

}  // namespace ftbench::train
