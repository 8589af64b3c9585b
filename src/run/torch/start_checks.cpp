#include "run/torch/start_checks.h"

#include <algorithm>
#include <filesystem>
#include <system_error>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "report/metrics/step_profiler.h"
#include "report/records.h"
#include "report/report.h"
#include "report/run_status.h"
#include "run/mllog.h"
#include "run/outputs.h"
#include "run/segment_journal.h"
#include "spec/choices.h"
#include "spec/spec_error.h"
#include "spec/spec_loader.h"
#include "train/checkpoint_files.h"
#include "train/stop_signals.h"
#include "util/error.h"
#include "util/io/output_file.h"
#include "util/text/iso8601.h"

namespace ftbench::run::detail {
namespace {

// Whatever a killed process left in the checkpoint folder is cleaned first.
void claim_checkpoint_folder(const RunContext& ctx, StartState& start) {
  const spec::CheckpointSpec& cp = ctx.spec.train.checkpoint;
  const bool checkpointing =
      !ctx.request.resume.empty() || cp.every_steps > 0 || cp.every_minutes > 0.0;
  if (checkpointing) {
    start.checkpoint_lock.emplace(ctx.checkpoint_dir);
    for (const std::string& cleaned : train::clean_checkpoint_leftovers(ctx.checkpoint_dir)) {
      spdlog::warn("{}: {}", ctx.checkpoint_dir, cleaned);
    }
    // A run started afresh over checkpoints (of a run killed without notice, say) would prune
    // them with its own saves and drop the killed process from the journal: only when asked.
    if (ctx.request.resume.empty() && ctx.lead()) {
      const std::vector<std::string> saved = train::list_checkpoints(ctx.checkpoint_dir);
      if (!saved.empty() && !ctx.request.force) {
        throw io::FileExistsError(fmt::format(
            "{}: holds {} checkpoint{} (the newest {}) that the run there may continue from: "
            "continue it with --resume latest, or pass --force to start again at step 1 (this "
            "run's saves then replace them)",
            ctx.checkpoint_dir, saved.size(), saved.size() == 1 ? "" : "s", saved.back()));
      }
      if (!saved.empty()) {
        spdlog::warn("{}: --force: starting at step 1; the {} checkpoint{} there will be replaced",
                     ctx.checkpoint_dir, saved.size(), saved.size() == 1 ? "" : "s");
      }
    }
    check_folder_writable(ctx.checkpoint_dir, "train.checkpoint.dir");
  } else if (const std::string why = folder_not_writable(ctx.checkpoint_dir); !why.empty()) {
    spdlog::warn("train.checkpoint.dir {}: {}: a stop signal could not save a checkpoint",
                 ctx.checkpoint_dir, why);
  } else if (std::error_code ec; std::filesystem::is_directory(ctx.checkpoint_dir, ec)) {
    // Held by another run now: this one could not save on a stop signal either.
    try {
      const train::CheckpointDirLock probe(ctx.checkpoint_dir);
    } catch (const std::exception& e) {
      spdlog::warn("{}: a stop signal could not save a checkpoint", e.what());
    }
  }
}

// A resumed run's checkpoint is read and checked first: a wrong one costs no machine time.
void read_resume_point(const RunContext& ctx, StartState& start, report::ReportBuilder& builder) {
  if (ctx.request.resume.empty()) return;
  // `latest` over a folder without a checkpoint: a stop (or a kill) before the first save. The
  // run starts at step 1, unless that would make steps of this job again
  // (continue_after_setup_stop); an explicit folder must hold one.
  std::error_code ec;
  if (ctx.request.resume == "latest" && (!std::filesystem::is_directory(ctx.checkpoint_dir, ec) ||
                                         train::list_checkpoints(ctx.checkpoint_dir).empty())) {
    start.resume_found_no_checkpoint = true;
    return;
  }
  start.resume = find_resume_point(ctx.spec, ctx.request.resume, ctx.checkpoint_dir);
  const report::Report& previous = *start.resume->previous;
  if (previous.world_size != ctx.request.launch.world_size) {
    throw train::CheckpointError(fmt::format(
        "{}: saved by a job of {} process{}, this one has {}: resume with the same number of "
        "processes (the same world size); on another, the ranks' gradient sums would add in "
        "another order and the run would not continue bit for bit",
        start.resume->folder, previous.world_size, previous.world_size == 1 ? "" : "es",
        ctx.request.launch.world_size));
  }
  std::optional<std::vector<report::Segment>> journal;
  try {
    journal = read_segment_journal(ctx.checkpoint_dir, ctx.spec_fingerprint,
                                   previous.segments.front().started_at_utc);
  } catch (const train::CheckpointError& e) {
    throw train::CheckpointError(std::string(e.what()) +
                                 "; the segment journal is damaged: remove it to resume without "
                                 "the processes it records (they are then not billed)");
  }
  report::EarlierSegments earlier;
  earlier.segments = segments_to_resume(previous.segments, journal, start.resume->manifest.step);
  earlier.steps = previous.steps;
  // Their evaluations and checkpoints, which the resumed report lists before this process's.
  earlier.evaluations = previous.evaluations;
  earlier.checkpoints = previous.checkpoints;
  for (const std::vector<double>& f : start.resume->manifest.step_flops) {
    // A checkpoint from before the executed count: lora_frozen_base's (with the recompute when
    // on), which counts causal attention's whole square.
    const double executed =
        f.size() > 4
            ? f[4]
            : (ctx.spec.model.activation_checkpointing == spec::choice::checkpointing::kFull
                   ? f[1]
                   : f[0]);
    earlier.flops.push_back({f[0], f[1], f[2], f[3], executed});
  }
  earlier.resumed_from = start.resume->folder;
  builder.resume(std::move(earlier));
}

// A stop before the first step (a reclaim notice while the image or the weights loaded) leaves a
// report of this job with no step and no checkpoint. Its rerun, plain, with --resume latest or
// with --force, starts at step 1 and keeps the stopped processes as earlier segments: their
// rented time is billed with this run's. A report of this job with steps but no checkpoint to
// continue them from is not passed over by --resume latest: those steps would be made again.
void continue_after_setup_stop(const RunContext& ctx, StartState& start,
                               report::ReportBuilder& builder) {
  if (start.resume) return;
  const std::optional<report::Report> old = existing_report(ctx.request.output_path);
  const bool same_job = old && old->spec_fingerprint == ctx.spec_fingerprint;
  if (same_job && old->steps.empty() &&
      (old->status == report::status::kInterrupted || old->status == report::status::kFailed)) {
    start.continues_setup_stop = true;
    report::EarlierSegments earlier;
    earlier.segments = old->segments;
    double billed = 0.0;
    for (const report::Segment& g : earlier.segments) billed += g.run_seconds;
    spdlog::info(
        "{}: this job {} before its first step; starting at step 1, its {} earlier process{} "
        "({:.1f} s) kept in the report as segment{} billed with this one",
        ctx.request.output_path, old->status == report::status::kFailed ? "failed" : "stopped",
        earlier.segments.size(), earlier.segments.size() == 1 ? "" : "es", billed,
        earlier.segments.size() == 1 ? "" : "s");
    builder.resume(std::move(earlier));
    return;
  }
  // Processes of this job killed before its first checkpoint are in the folder's journal (a run
  // that saves checkpoints keeps one from its start): billed with this run, their steps made
  // again.
  if (start.checkpoint_lock && train::list_checkpoints(ctx.checkpoint_dir).empty() &&
      (!old || old->steps.empty())) {
    std::optional<std::vector<report::Segment>> journal;
    try {
      journal = read_segment_journal_of_job(ctx.checkpoint_dir, ctx.spec_fingerprint);
    } catch (const train::CheckpointError& e) {
      spdlog::warn("{}: not billed from it (damaged)", e.what());
    }
    // A run that ended (completed) is another run, whatever became of its checkpoints.
    const bool ended = journal && std::any_of(journal->begin(), journal->end(), [](const auto& g) {
                         return g.status == report::status::kCompleted;
                       });
    if (journal && !ended) {
      report::EarlierSegments earlier;
      earlier.segments = segments_to_resume(*journal, std::nullopt, 0);
      double billed = 0.0;
      for (const report::Segment& g : earlier.segments) billed += g.run_seconds;
      spdlog::info(
          "{}: {} earlier process{} of this job ({:.1f} s) ended before a checkpoint; starting "
          "at step 1, {} kept in the report as segment{} billed with this one",
          ctx.checkpoint_dir, earlier.segments.size(), earlier.segments.size() == 1 ? "" : "es",
          billed, earlier.segments.size() == 1 ? "it is" : "they are",
          earlier.segments.size() == 1 ? "" : "s");
      builder.resume(std::move(earlier));
      start.continues_setup_stop = old.has_value() && same_job;
      return;
    }
  }
  if (!start.resume_found_no_checkpoint) return;
  if (same_job && !old->steps.empty() && old->status != report::status::kCompleted) {
    throw train::CheckpointError(fmt::format(
        "{}: no checkpoint in it, and {} records {} step{} of this job: --resume latest cannot "
        "continue them (the checkpoint folder was emptied or moved?); put the checkpoint back, "
        "or run without --resume and with --force to start again at step 1",
        ctx.checkpoint_dir, ctx.request.output_path, old->steps.size(),
        old->steps.size() == 1 ? "" : "s"));
  }
  spdlog::warn("--resume latest: no checkpoint in {}: starting at step 1", ctx.checkpoint_dir);
}

// The report in the way: the one of the run being resumed may be replaced, and so may one of a
// run that failed (a corrected rerun needs no --force); a completed or interrupted run's is
// kept unless --force. The export folders are checked now too: a run must not train for hours
// and then find it may not write its adapter.
void check_outputs(const RunContext& ctx, StartState& start) {
  // What the run reads is never what it writes, even with --force; nor is an ftbench file of
  // another kind (util/io/output_rules.h).
  std::vector<io::NamedPath> inputs = ctx.request.inputs;
  for (const io::NamedPath& p : spec_input_files(ctx.spec)) inputs.push_back(p);
  io::check_output_rules("-o", ctx.request.output_path, "report", inputs);
  io::check_output_rules("--mllog", ctx.instrumentation.mllog_path, "event log", inputs);
  const std::optional<report::Report> old_report = existing_report(ctx.request.output_path);
  if (old_report) start.old_report_status = old_report->status;
  const bool old_report_failed = old_report && old_report->status == report::status::kFailed;
  start.replace_report = ctx.request.force || old_report_failed || start.continues_setup_stop ||
                         (start.resume && may_replace_report(old_report, ctx.spec_fingerprint));
  // What a process killed while writing the report left beside it.
  for (const std::string& removed : io::remove_stale_temporary_files(ctx.request.output_path)) {
    spdlog::warn("removed {}, left by a process that did not finish writing the report", removed);
  }
  io::check_writable(ctx.request.output_path, start.replace_report);
  // Held to the end: a second run given the same -o is refused now, not after training.
  start.report_claim.emplace(ctx.request.output_path);
  if (!ctx.instrumentation.mllog_path.empty()) {
    if (io::absolute_normal(ctx.instrumentation.mllog_path) ==
        io::absolute_normal(ctx.request.output_path)) {
      throw spec::SpecError({spec::issue_at(ctx.spec, "output.mllog",
                                            "the event log and the report would be one file (" +
                                                ctx.instrumentation.mllog_path +
                                                "); give the log a path of its own")});
    }
    // A resumed run appends its segment to the log it started: only to an event log. One that
    // continues a stop before the first step replaces that process's log (it holds no step),
    // but only an event log.
    if (start.resume || start.continues_setup_stop) {
      check_mllog_to_continue(ctx.instrumentation.mllog_path);
    } else {
      io::check_writable(ctx.instrumentation.mllog_path, ctx.request.force);
    }
    for (const std::string& dir : {ctx.adapter_dir, ctx.merged_dir}) {
      if (!dir.empty() &&
          io::folder_holds(io::absolute_normal(dir).string(),
                           io::absolute_normal(ctx.instrumentation.mllog_path).string())) {
        throw spec::SpecError(
            {spec::issue_at(ctx.spec, "output.mllog",
                            "the event log " + ctx.instrumentation.mllog_path +
                                " would be inside the export folder " + dir +
                                ", which the export replaces; give the log a path outside it")});
      }
    }
  }
  if (ctx.instrumentation.profile_steps && ctx.lead()) {
    const metrics::ProfilerSupport support = metrics::profiler_support();
    if (!support.available) {
      throw BadInput("--profile-steps: this LibTorch cannot profile: " + support.why_not);
    }
    start.profile_paths = profile_paths(ctx.request.output_path);
    for (const std::string& path : {start.profile_paths.trace, start.profile_paths.ops_table,
                                    start.profile_paths.kernels_table}) {
      io::check_output_rules("--profile-steps", path, "", inputs);
      if (ctx.instrumentation.mllog_path == path) {
        throw BadInput("--profile-steps: the profile's " + path + " would be the event log");
      }
      io::check_writable(path, ctx.request.force);
    }
  }
  for (const auto& [key, dir] :
       {std::pair<const char*, std::string>{"output.adapter", ctx.adapter_dir},
        {"output.merged", ctx.merged_dir}}) {
    if (dir.empty()) continue;
    // A report that -o puts inside an export folder (the spec's own report path was checked
    // with the spec) would go with the folder, or be replaced by it.
    const std::string report = io::absolute_normal(ctx.request.output_path).string();
    const std::string folder = io::absolute_normal(dir).string();
    if (io::folder_holds(folder, report)) {
      throw spec::SpecError(
          {spec::issue_at(ctx.spec, key, spec::export_overlap_message(folder, "-o", report))});
    }
    check_export_writable(dir, key, ctx.request.force);
  }
}

// An external start before the end of an earlier segment overlaps it: a new machine booted
// while the old one still ran is billed twice rightly; the same machine, given its boot time
// again, is not (leave --t0 out on a resume there).
void warn_if_start_overlaps(const RunContext& ctx, const report::ReportBuilder& builder) {
  const std::optional<double>& t0 = ctx.instrumentation.t0_epoch_seconds;
  if (!t0 || builder.earlier_segments().empty()) return;
  const report::Segment& last = builder.earlier_segments().back();
  const std::optional<double> ended = text::parse_iso8601_utc(last.finished_at_utc);
  if (ended && *t0 < *ended) {
    spdlog::warn(
        "{} {:.3f} lies {:.1f} s before the end of segment {} ({}): this segment's rented time "
        "overlaps it; if this is the machine that ran it, leave {} out (its time is billed "
        "twice otherwise)",
        ctx.instrumentation.t0_source, *t0, *ended - *t0, last.index, last.finished_at_utc,
        ctx.instrumentation.t0_source);
  }
}

}  // namespace

void check_before_start(const RunContext& ctx, StartState& start, report::ReportBuilder& builder) {
  // Rank 0 alone writes: the other ranks neither lock nor check what they do not touch.
  if (ctx.lead()) claim_checkpoint_folder(ctx, start);
  read_resume_point(ctx, start, builder);
  if (ctx.lead()) {
    continue_after_setup_stop(ctx, start, builder);
    check_outputs(ctx, start);
  }
  warn_if_start_overlaps(ctx, builder);
}

void check_stop_after_steps(const RunContext& context, const StartState& start,
                            int64_t total_steps) {
  const int64_t stop = context.request.stop_after_steps;
  if (stop == 0) return;
  const int64_t first = start.first_step();
  const std::string range = total_steps > 0 ? fmt::format("from {} to {}", first, total_steps)
                                            : fmt::format("from {} on", first);
  if (total_steps > 0 && stop > total_steps) {
    throw BadInput(
        fmt::format("--stop-after-steps {}: the run has {} optimizer step{}; stop after a step {}",
                    stop, total_steps, total_steps == 1 ? "" : "s", range));
  }
  if (stop < first) {
    throw BadInput(fmt::format(
        "--stop-after-steps {}: this process resumes after step {}; stop after a step {}", stop,
        first - 1, range));
  }
}

// A stop asked for during set-up ends the run at the end of the phase: nothing of this segment
// is worth a checkpoint yet (a resumed run's checkpoint is still there).
void stop_if_asked(const RunContext& context, const StartState& start, const char* phase_name) {
  if (const int signal = context.signals.received(); signal != 0) {
    throw train::Interrupted(fmt::format(
        "stopped by {} during set-up (after {}), before any step of this process: "
        "no checkpoint written; {}",
        train::StopSignals::name(signal), phase_name,
        start.resume ? "resume again from " + start.resume->folder
                     : std::string("run the same command again to start at step 1 (this "
                                   "process stays in the report as a segment, billed)")));
  }
}

}  // namespace ftbench::run::detail
