#include "run/mllog.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "util/io/output_file.h"

namespace ftbench::run {
namespace {

using OJson = nlohmann::ordered_json;

const char* event_type(MlEvent type) {
  switch (type) {
    case MlEvent::kStart:
      return "INTERVAL_START";
    case MlEvent::kEnd:
      return "INTERVAL_END";
    case MlEvent::kPoint:
      break;
  }
  return "POINT_IN_TIME";
}

// Python's json.dumps of a value with its default separators (", " and ": "): nlohmann writes
// none, so spaces are put back outside strings.
std::string python_dumps(const OJson& value) {
  const std::string compact = value.dump(-1, ' ', true, OJson::error_handler_t::replace);
  std::string out;
  bool in_string = false;
  for (std::size_t i = 0; i < compact.size(); ++i) {
    const char c = compact[i];
    out += c;
    if (in_string) {
      if (c == '\\') {
        out += compact[++i];
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == ',' || c == ':') {
      out += ' ';
    }
  }
  return out;
}

// Non-finite numbers become null: MLPerf's parser (Python's json) reads no nan.
OJson finite(OJson value) {
  if (value.is_number_float() && !std::isfinite(value.get<double>())) return nullptr;
  return value;
}

// Lines already in the log, so a resumed run's numbering goes on.
int64_t count_lines(const std::string& path) {
  std::ifstream in(path);
  int64_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

}  // namespace

void check_mllog_to_continue(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(std::filesystem::symlink_status(path, ec))) return;
  std::string first;
  if (std::filesystem::is_regular_file(path, ec))
    std::getline(std::ifstream(path) >> std::ws, first);
  if (first.rfind(":::MLLOG ", 0) != 0) {
    throw io::FileExistsError("output.mllog " + path +
                              ": exists and is not an event log; a resumed run appends only to "
                              "the log its first process wrote (give --mllog another path)");
  }
}

std::string mllog_line(int64_t time_ms, MlEvent type, const std::string& key, const OJson& value,
                       const OJson& metadata) {
  OJson line;
  line["namespace"] = "";
  line["time_ms"] = time_ms;
  line["event_type"] = event_type(type);
  line["key"] = key;
  line["value"] = finite(value);
  line["metadata"] = metadata;
  return ":::MLLOG " + python_dumps(line) + "\n";
}

MlLog::MlLog(const std::string& path, bool force, bool append, double process_start_epoch_seconds)
    : path_(path), start_epoch_seconds_(process_start_epoch_seconds) {
  if (append) {
    check_mllog_to_continue(path);
    lineno_ = count_lines(path);
    continuing_ = lineno_ > 0;
  } else {
    io::check_writable(path, force);
  }
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ignored;
  if (!parent.empty()) std::filesystem::create_directories(parent, ignored);
  // Never through a link (util/io/output_rules.h): a link in the way is replaced (--force said so),
  // and one that appeared since is refused by O_NOFOLLOW rather than followed into its target.
  if (!append && std::filesystem::is_symlink(std::filesystem::symlink_status(path, ignored))) {
    std::filesystem::remove(path, ignored);
  }
  const int fd =
      ::open(path.c_str(),
             O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (append ? O_APPEND : O_TRUNC), 0644);
  if (fd < 0) {
    const int error = errno;
    throw io::FileWriteError("output.mllog " + path + ": cannot " +
                             (append ? "append to" : "create") + ": " +
                             (error == ELOOP ? std::string("it is a symbolic link, and ftbench "
                                                           "writes no output through a link")
                                             : std::string(std::strerror(error))));
  }
  file_ = ::fdopen(fd, append ? "a" : "w");
  if (file_ == nullptr) {
    const int error = errno;
    ::close(fd);
    throw io::FileWriteError("output.mllog " + path + ": cannot create: " + std::strerror(error));
  }
}

MlLog::~MlLog() {
  if (file_ != nullptr) std::fclose(file_);
}

void MlLog::write(double seconds, MlEvent type, const std::string& key, const OJson& value,
                  OJson metadata) {
  if (stopped_) return;
  OJson m = {{"file", "ftbench"}, {"lineno", ++lineno_}};
  for (auto& [k, v] : metadata.items()) m[k] = v;
  const auto time_ms = static_cast<int64_t>(std::floor((start_epoch_seconds_ + seconds) * 1e3));
  const std::string line = mllog_line(time_ms, type, key, value, m);
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0) {
    throw io::FileWriteError("output.mllog " + path_ + ": cannot write: " + std::strerror(errno));
  }
}

OJson MlLog::at_step(int64_t step, int64_t epoch) const {
  return {{"samples_count", step * global_batch_size_}, {"epoch_num", epoch}};
}

void MlLog::start_init(double t0_seconds, double now_seconds, const MlLogJob& job) {
  global_batch_size_ = job.global_batch_size;
  if (continuing_) return;  // the first process logged the start
  // Stamped at t0, with init_start: the line says what held since the start (no cache was
  // cleared), and a later stamp before init_start's would make the log's first line its latest.
  write(t0_seconds, MlEvent::kPoint, "cache_clear", false, OJson::object());
  write(t0_seconds, MlEvent::kStart, "init_start", nullptr, OJson::object());
  const OJson submission = {{"submission_benchmark", "llama2_70b_lora"},
                            {"submission_org", "ftbench"},
                            {"submission_division", "open"},
                            {"submission_status", "research"}};
  for (const auto& [key, value] : submission.items()) {
    write(now_seconds, MlEvent::kPoint, key, value, OJson::object());
  }
  const OJson hyperparameters = {{"seed", job.seed},
                                 {"global_batch_size", job.global_batch_size},
                                 {"gradient_accumulation_steps", job.gradient_accumulation_steps},
                                 {"max_sequence_length", job.max_sequence_length},
                                 {"opt_name", "adamw"},
                                 {"opt_base_learning_rate", job.base_learning_rate},
                                 {"opt_learning_rate_warmup_steps", job.warmup_steps},
                                 {"opt_adamw_weight_decay", job.weight_decay},
                                 {"opt_adamw_beta_1", job.adam_beta1},
                                 {"opt_adamw_beta_2", job.adam_beta2},
                                 {"opt_adamw_epsilon", job.adam_epsilon},
                                 {"opt_gradient_clip_norm", job.gradient_clip_norm},
                                 {"lora_rank", job.lora_rank},
                                 {"lora_alpha", job.lora_alpha},
                                 {"lora_dropout", job.lora_dropout}};
  for (const auto& [key, value] : hyperparameters.items()) {
    write(now_seconds, MlEvent::kPoint, key, value, OJson::object());
  }
}

void MlLog::start_run(double now_seconds, const std::string& platform) {
  if (continuing_) return;
  write(now_seconds, MlEvent::kPoint, "submission_platform", platform, OJson::object());
  write(now_seconds, MlEvent::kEnd, "init_stop", nullptr, OJson::object());
  write(now_seconds, MlEvent::kStart, "run_start", nullptr, OJson::object());
}

void MlLog::start_training(double now_seconds, int64_t first_step, int64_t epoch,
                           int64_t train_samples, int64_t eval_samples, int64_t training_steps) {
  if (!continuing_) {
    write(now_seconds, MlEvent::kPoint, "train_samples", train_samples, OJson::object());
    write(now_seconds, MlEvent::kPoint, "eval_samples", eval_samples, OJson::object());
    write(now_seconds, MlEvent::kPoint, "opt_learning_rate_training_steps", training_steps,
          OJson::object());
  }
  const OJson at = at_step(first_step - 1, epoch);
  write(now_seconds, MlEvent::kStart, "block_start", nullptr,
        {{"samples_count", at["samples_count"]}, {"first_epoch_num", epoch}, {"epoch_count", 1}});
  write(now_seconds, MlEvent::kStart, "epoch_start", nullptr, at);
  block_open_ = true;
  epoch_open_ = true;
}

void MlLog::step_ended(double now_seconds, int64_t step, int64_t epoch, bool epoch_ended,
                       bool more) {
  if (!epoch_ended) return;
  write(now_seconds, MlEvent::kEnd, "epoch_stop", nullptr, at_step(step, epoch));
  epoch_open_ = false;
  if (more) {
    write(now_seconds, MlEvent::kStart, "epoch_start", nullptr, at_step(step, epoch + 1));
    epoch_open_ = true;
  }
}

void MlLog::evaluation(double start_seconds, double end_seconds, int64_t step, int64_t epoch,
                       double loss, bool more) {
  const OJson at = at_step(step, epoch);
  if (block_open_) {
    write(start_seconds, MlEvent::kEnd, "block_stop", nullptr,
          {{"samples_count", at["samples_count"]}, {"first_epoch_num", epoch}});
  }
  write(start_seconds, MlEvent::kStart, "eval_start", nullptr, at);
  if (std::isfinite(loss)) write(end_seconds, MlEvent::kPoint, "eval_accuracy", loss, at);
  write(end_seconds, MlEvent::kEnd, "eval_stop", nullptr, at);
  block_open_ = more;
  if (more) {
    write(end_seconds, MlEvent::kStart, "block_start", nullptr,
          {{"samples_count", at["samples_count"]}, {"first_epoch_num", epoch}, {"epoch_count", 1}});
  }
}

void MlLog::pause(double now_seconds, int64_t step, int64_t epoch) {
  const OJson at = at_step(step, epoch);
  if (block_open_) {
    write(now_seconds, MlEvent::kEnd, "block_stop", nullptr,
          {{"samples_count", at["samples_count"]}, {"first_epoch_num", epoch}});
  }
  if (epoch_open_) write(now_seconds, MlEvent::kEnd, "epoch_stop", nullptr, at);
  block_open_ = epoch_open_ = false;
  stopped_ = true;
}

void MlLog::stop_run(double now_seconds, int64_t step, int64_t epoch, bool completed) {
  const OJson at = at_step(step, epoch);
  if (block_open_) {
    write(now_seconds, MlEvent::kEnd, "block_stop", nullptr,
          {{"samples_count", at["samples_count"]}, {"first_epoch_num", epoch}});
  }
  if (epoch_open_) write(now_seconds, MlEvent::kEnd, "epoch_stop", nullptr, at);
  write(now_seconds, MlEvent::kEnd, "run_stop", nullptr,
        {{"samples_count", at["samples_count"]},
         {"epoch_num", epoch},
         {"status", completed ? "success" : "aborted"}});
  block_open_ = epoch_open_ = false;
  stopped_ = true;
}

}  // namespace ftbench::run
