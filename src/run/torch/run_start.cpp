// Before any phase of a run: the checks that cost no machine time (the checkpoint folder, the
// resume point, a stop before an earlier process's first step, the outputs), split from
// runner.cpp, which runs the phases.
#include "run.h"

#include <algorithm>

namespace ftbench::run {
namespace detail {

// Whatever a killed process left in the checkpoint folder is cleaned first.
void Run::claim_checkpoint_folder() {
  const spec::CheckpointSpec& cp = spec_.train.checkpoint;
  const bool checkpointing = !o_.resume.empty() || cp.every_steps > 0 || cp.every_minutes > 0.0;
  if (checkpointing) {
    cp_lock_.emplace(cp_dir_);
    for (const std::string& cleaned : train::clean_checkpoint_leftovers(cp_dir_)) {
      spdlog::warn("{}: {}", cp_dir_, cleaned);
    }
    // A run started afresh over checkpoints (of a run killed without notice, say) would prune
    // them with its own saves and drop the killed process from the journal: only when asked.
    if (o_.resume.empty() && lead()) {
      const std::vector<std::string> saved = train::list_checkpoints(cp_dir_);
      if (!saved.empty() && !o_.force) {
        throw io::FileExistsError(fmt::format(
            "{}: holds {} checkpoint{} (the newest {}) that the run there may continue from: "
            "continue it with --resume latest, or pass --force to start again at step 1 (this "
            "run's saves then replace them)",
            cp_dir_, saved.size(), saved.size() == 1 ? "" : "s", saved.back()));
      }
      if (!saved.empty()) {
        spdlog::warn("{}: --force: starting at step 1; the {} checkpoint{} there will be replaced",
                     cp_dir_, saved.size(), saved.size() == 1 ? "" : "s");
      }
    }
    check_folder_writable(cp_dir_, "train.checkpoint.dir");
  } else if (const std::string why = folder_not_writable(cp_dir_); !why.empty()) {
    spdlog::warn("train.checkpoint.dir {}: {}: a stop signal could not save a checkpoint", cp_dir_,
                 why);
  } else if (std::error_code ec; std::filesystem::is_directory(cp_dir_, ec)) {
    // Held by another run now: this one could not save on a stop signal either.
    try {
      const train::CheckpointDirLock probe(cp_dir_);
    } catch (const std::exception& e) {
      spdlog::warn("{}: a stop signal could not save a checkpoint", e.what());
    }
  }
}

// A resumed run's checkpoint is read and checked first: a wrong one costs no machine time.
void Run::read_resume_point() {
  if (o_.resume.empty()) return;
  // `latest` over a folder without a checkpoint: a stop (or a kill) before the first save. The
  // run starts at step 1, unless that would make steps of this job again
  // (continue_after_setup_stop); an explicit folder must hold one.
  std::error_code ec;
  if (o_.resume == "latest" &&
      (!std::filesystem::is_directory(cp_dir_, ec) || train::list_checkpoints(cp_dir_).empty())) {
    resume_found_no_checkpoint_ = true;
    return;
  }
  resume_ = find_resume_point(spec_, o_.resume, cp_dir_);
  if (resume_->previous.world_size != o_.launch.world_size) {
    throw train::CheckpointError(fmt::format(
        "{}: saved by a job of {} process{}, this one has {}: resume with the same number of "
        "processes (the same world size); on another, the ranks' gradient sums would add in "
        "another order and the run would not continue bit for bit",
        resume_->folder, resume_->previous.world_size,
        resume_->previous.world_size == 1 ? "" : "es", o_.launch.world_size));
  }
  std::optional<std::vector<report::Segment>> journal;
  try {
    journal = train::read_segment_journal(cp_dir_, spec_fingerprint_,
                                          resume_->previous.segments.front().started_at_utc);
  } catch (const train::CheckpointError& e) {
    throw train::CheckpointError(std::string(e.what()) +
                                 "; the segment journal is damaged: remove it to resume without "
                                 "the processes it records (they are then not billed)");
  }
  EarlierSegments earlier;
  earlier.segments =
      train::segments_to_resume(resume_->previous.segments, journal, resume_->manifest.step);
  earlier.steps = resume_->previous.steps;
  for (const std::vector<double>& f : resume_->manifest.step_flops) {
    // A checkpoint from before the executed count: lora_frozen_base's (with the recompute when
    // on), which counts causal attention's whole square.
    const double executed =
        f.size() > 4
            ? f[4]
            : (spec_.model.activation_checkpointing == spec::choice::checkpointing::kFull ? f[1]
                                                                                          : f[0]);
    earlier.flops.push_back({f[0], f[1], f[2], f[3], executed});
  }
  earlier.resumed_from = resume_->folder;
  recorder_.resume(std::move(earlier));
}

// A stop before the first step (a reclaim notice while the image or the weights loaded) leaves a
// report of this job with no step and no checkpoint. Its rerun, plain, with --resume latest or
// with --force, starts at step 1 and keeps the stopped processes as earlier segments: their
// rented time is billed with this run's. A report of this job with steps but no checkpoint to
// continue them from is not passed over by --resume latest: those steps would be made again.
void Run::continue_after_setup_stop() {
  if (resume_) return;
  const std::optional<report::Report> old = existing_report(o_.output_path);
  const bool same_job = old && old->spec_fingerprint == spec_fingerprint_;
  if (same_job && old->steps.empty() &&
      (old->status == report::status::kInterrupted || old->status == report::status::kFailed)) {
    continues_setup_stop_ = true;
    EarlierSegments earlier;
    earlier.segments = old->segments;
    double billed = 0.0;
    for (const report::Segment& g : earlier.segments) billed += g.run_seconds;
    spdlog::info(
        "{}: this job {} before its first step; starting at step 1, its {} earlier process{} "
        "({:.1f} s) kept in the report as segment{} billed with this one",
        o_.output_path, old->status == report::status::kFailed ? "failed" : "stopped",
        earlier.segments.size(), earlier.segments.size() == 1 ? "" : "es", billed,
        earlier.segments.size() == 1 ? "" : "s");
    recorder_.resume(std::move(earlier));
    return;
  }
  // Processes of this job killed before its first checkpoint are in the folder's journal (a run
  // that saves checkpoints keeps one from its start): billed with this run, their steps made
  // again.
  if (cp_lock_ && train::list_checkpoints(cp_dir_).empty() && (!old || old->steps.empty())) {
    std::optional<std::vector<report::Segment>> journal;
    try {
      journal = train::read_segment_journal_of_job(cp_dir_, spec_fingerprint_);
    } catch (const train::CheckpointError& e) {
      spdlog::warn("{}: not billed from it (damaged)", e.what());
    }
    // A run that ended (completed) is another run, whatever became of its checkpoints.
    const bool ended = journal && std::any_of(journal->begin(), journal->end(), [](const auto& g) {
                         return g.status == report::status::kCompleted;
                       });
    if (journal && !ended) {
      EarlierSegments earlier;
      earlier.segments = train::segments_to_resume(*journal, std::nullopt, 0);
      double billed = 0.0;
      for (const report::Segment& g : earlier.segments) billed += g.run_seconds;
      spdlog::info(
          "{}: {} earlier process{} of this job ({:.1f} s) ended before a checkpoint; starting "
          "at step 1, {} kept in the report as segment{} billed with this one",
          cp_dir_, earlier.segments.size(), earlier.segments.size() == 1 ? "" : "es", billed,
          earlier.segments.size() == 1 ? "it is" : "they are",
          earlier.segments.size() == 1 ? "" : "s");
      recorder_.resume(std::move(earlier));
      continues_setup_stop_ = old.has_value() && same_job;
      return;
    }
  }
  if (!resume_found_no_checkpoint_) return;
  if (same_job && !old->steps.empty() && old->status != report::status::kCompleted) {
    throw train::CheckpointError(fmt::format(
        "{}: no checkpoint in it, and {} records {} step{} of this job: --resume latest cannot "
        "continue them (the checkpoint folder was emptied or moved?); put the checkpoint back, "
        "or run without --resume and with --force to start again at step 1",
        cp_dir_, o_.output_path, old->steps.size(), old->steps.size() == 1 ? "" : "s"));
  }
  spdlog::warn("--resume latest: no checkpoint in {}: starting at step 1", cp_dir_);
}

// The report in the way: the one of the run being resumed may be replaced, and so may one of a
// run that failed (a corrected rerun needs no --force); a completed or interrupted run's is
// kept unless --force. The export folders are checked now too: a run must not train for hours
// and then find it may not write its adapter.
void Run::check_outputs() {
  // What the run reads is never what it writes, even with --force; nor is an ftbench file of
  // another kind (io/output_rules.h).
  std::vector<io::NamedPath> inputs = o_.inputs;
  for (const io::NamedPath& p : spec_input_files(spec_)) inputs.push_back(p);
  io::check_output_rules("-o", o_.output_path, "report", inputs);
  io::check_output_rules("--mllog", o_.mllog_path, "event log", inputs);
  old_report_ = existing_report(o_.output_path);
  const bool old_report_failed = old_report_ && old_report_->status == report::status::kFailed;
  replace_report_ = o_.force || old_report_failed || continues_setup_stop_ ||
                    (resume_ && may_replace_report(old_report_, spec_fingerprint_));
  // What a process killed while writing the report left beside it.
  for (const std::string& removed : io::remove_stale_temporary_files(o_.output_path)) {
    spdlog::warn("removed {}, left by a process that did not finish writing the report", removed);
  }
  io::check_writable(o_.output_path, replace_report_);
  // Held to the end: a second run given the same -o is refused now, not after training.
  report_claim_.emplace(o_.output_path);
  if (!o_.mllog_path.empty()) {
    if (io::absolute_normal(o_.mllog_path) == io::absolute_normal(o_.output_path)) {
      throw spec::SpecError(
          {spec::issue_at(spec_, "output.mllog",
                          "the event log and the report would be one file (" + o_.mllog_path +
                              "); give the log a path of its own")});
    }
    // A resumed run appends its segment to the log it started: only to an event log. One that
    // continues a stop before the first step replaces that process's log (it holds no step),
    // but only an event log.
    if (resume_ || continues_setup_stop_) {
      check_mllog_to_continue(o_.mllog_path);
    } else {
      io::check_writable(o_.mllog_path, o_.force);
    }
    for (const std::string& dir : {adapter_dir_, merged_dir_}) {
      if (!dir.empty() && io::folder_holds(io::absolute_normal(dir).string(),
                                           io::absolute_normal(o_.mllog_path).string())) {
        throw spec::SpecError({spec::issue_at(
            spec_, "output.mllog",
            "the event log " + o_.mllog_path + " would be inside the export folder " + dir +
                ", which the export replaces; give the log a path outside it")});
      }
    }
  }
  if (o_.profile_steps && lead()) {
    const metrics::ProfilerSupport support = metrics::profiler_support();
    if (!support.available) {
      throw BadInput("--profile-steps: this LibTorch cannot profile: " + support.why_not);
    }
    profile_paths_ = profile_paths(o_.output_path);
    for (const std::string& path :
         {profile_paths_.trace, profile_paths_.ops_table, profile_paths_.kernels_table}) {
      io::check_output_rules("--profile-steps", path, "", inputs);
      if (o_.mllog_path == path) {
        throw BadInput("--profile-steps: the profile's " + path + " would be the event log");
      }
      io::check_writable(path, o_.force);
    }
  }
  for (const auto& [key, dir] :
       {std::pair<const char*, std::string>{"output.adapter", adapter_dir_},
        {"output.merged", merged_dir_}}) {
    if (dir.empty()) continue;
    // A report that -o puts inside an export folder (the spec's own report path was checked
    // with the spec) would go with the folder, or be replaced by it.
    const std::string report = io::absolute_normal(o_.output_path).string();
    const std::string folder = io::absolute_normal(dir).string();
    if (io::folder_holds(folder, report)) {
      throw spec::SpecError(
          {spec::issue_at(spec_, key, spec::export_overlap_message(folder, "-o", report))});
    }
    check_export_writable(dir, key, o_.force);
  }
}

}  // namespace detail
}  // namespace ftbench::run
