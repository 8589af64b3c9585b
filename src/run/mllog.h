// The run as an MLPerf-style event log (output.mllog, `ftbench run --mllog PATH`): one
// `:::MLLOG {json}` line per event, in the mlperf-logging format that MLPerf Training's
// compliance checker and result summarizer read (docs/mllog.md gives every key and the rules
// followed). Written as the run goes, by the process that writes the report, each line flushed.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace ftbench::run {

// What the log says about the job before it starts (MLPerf's submission and hyperparameter
// keys), taken from the spec and the derived counts.
struct MlLogJob {
  int64_t seed = 0;
  int64_t global_batch_size = 0;  // sequences per optimizer step (the effective batch)
  int64_t gradient_accumulation_steps = 0;
  int64_t max_sequence_length = 0;
  double base_learning_rate = 0.0;
  int64_t warmup_steps = 0;  // learning-rate warm-up
  double weight_decay = 0.0;
  double adam_beta1 = 0.0;
  double adam_beta2 = 0.0;
  double adam_epsilon = 0.0;
  double gradient_clip_norm = 0.0;
  int64_t lora_rank = 0;
  double lora_alpha = 0.0;
  double lora_dropout = 0.0;
};

// One event line: ":::MLLOG " and the object {namespace, time_ms, event_type, key, value,
// metadata} in mllog's key order and spacing (Python's json.dumps defaults: ", " and ": ",
// non-ASCII escaped). metadata starts with "file" and "lineno" as mllog's does; a non-finite
// number in `value` is written as null (MLPerf's parser takes no nan).
enum class MlEvent { kPoint, kStart, kEnd };
std::string mllog_line(int64_t time_ms, MlEvent type, const std::string& key,
                       const nlohmann::ordered_json& value, const nlohmann::ordered_json& metadata);

// A resumed run's log must be an event log its first process started: a regular file whose
// first line is an :::MLLOG line, or absent. Throws io::FileExistsError (exit 5) otherwise.
void check_mllog_to_continue(const std::string& path);

class MlLog {
 public:
  // Creates `path` (its folder too) for the log; refused (io::FileExistsError) when it exists
  // and neither `force` nor `append` is on (`append`: a resumed run's segment goes on after
  // the lines there). Lines are stamped with `epoch_seconds_at(process_seconds)`: the process
  // clock's start on the wall clock plus the given process-clock seconds, so the log and the
  // report's phases agree to the millisecond.
  MlLog(const std::string& path, bool force, bool append, double process_start_epoch_seconds);
  MlLog(const MlLog&) = delete;
  MlLog& operator=(const MlLog&) = delete;
  ~MlLog();

  // cache_clear (false: ftbench clears no cache) and init_start, both at t0 (process seconds,
  // negative when an external t0 lies before the process), then, at `now_seconds`, the
  // submission keys and the job's hyperparameters: time_ms never decreases down the file.
  void start_init(double t0_seconds, double now_seconds, const MlLogJob& job);
  // submission_platform (the device and how many, "1xNVIDIA H100 80GB HBM3", known once the
  // backend is up), init_stop and run_start: the clock starts before the run first touches its
  // data.
  void start_run(double now_seconds, const std::string& platform);
  // Once the data is read: train_samples and eval_samples (training and validation examples),
  // opt_learning_rate_training_steps (the optimizer steps of the schedule), then block_start and
  // epoch_start before the first step, `first_step` (1, or where a resumed run goes on).
  void start_training(double now_seconds, int64_t first_step, int64_t epoch, int64_t train_samples,
                      int64_t eval_samples, int64_t training_steps);
  // After an optimizer step: epoch_stop when it ended its epoch (and epoch_start of the next
  // when `more` steps follow).
  void step_ended(double now_seconds, int64_t step, int64_t epoch, bool epoch_ended, bool more);
  // A validation pass after `step`, from `start_seconds` to `end_seconds`: block_stop,
  // eval_start, eval_accuracy (the validation loss; left out when not finite), eval_stop, and
  // block_start again when `more` steps follow.
  void evaluation(double start_seconds, double end_seconds, int64_t step, int64_t epoch,
                  double loss, bool more);
  // run_stop with status "success" for a completed run, "aborted" for any other, after closing
  // the open block and epoch. Nothing is written after it.
  void stop_run(double now_seconds, int64_t step, int64_t epoch, bool completed);
  // A stop that a resume continues (a signal, --stop-after-steps): block_stop and epoch_stop,
  // no run_stop; the resumed process appends the rest of the run.
  void pause(double now_seconds, int64_t step, int64_t epoch);

  int64_t global_batch_size() const { return global_batch_size_; }

 private:
  void write(double seconds, MlEvent type, const std::string& key,
             const nlohmann::ordered_json& value, nlohmann::ordered_json metadata);
  nlohmann::ordered_json at_step(int64_t step, int64_t epoch) const;

  std::string path_;
  std::FILE* file_ = nullptr;
  double start_epoch_seconds_ = 0.0;
  int64_t global_batch_size_ = 0;
  int64_t lineno_ = 0;
  bool continuing_ = false;  // appending a resumed run's segment: no second preamble
  bool block_open_ = false;
  bool epoch_open_ = false;
  bool stopped_ = false;
};

}  // namespace ftbench::run
