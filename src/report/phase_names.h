// The names of a run's phases as the report records them (timing.phases[].name,
// docs/report-schema.md). In the order a run passes them; the last two end a run that stopped.
#pragma once

namespace ftbench::report::phase {

inline constexpr const char* kLaunch = "launch";       // process start to main()
inline constexpr const char* kSpecLoad = "spec_load";  // the spec read and validated
inline constexpr const char* kBackendInit = "backend_init";
inline constexpr const char* kModelBuild = "model_build";
inline constexpr const char* kWeightLoad = "weight_load";
inline constexpr const char* kDataPrepare = "data_prepare";
inline constexpr const char* kCheckpointLoad = "checkpoint_load";  // --resume only
inline constexpr const char* kFirstStep = "first_step";
inline constexpr const char* kTraining = "training";  // split by the next two
inline constexpr const char* kEvaluation = "evaluation";
inline constexpr const char* kCheckpoint = "checkpoint";
inline constexpr const char* kAdapterExport = "adapter_export";
inline constexpr const char* kMergedExport = "merged_export";
inline constexpr const char* kSummarize = "summarize";
inline constexpr const char* kReportWrite = "report_write";
inline constexpr const char* kInterrupted = "interrupted";  // a stop signal or --stop-after-steps
inline constexpr const char* kFailed = "failed";

}  // namespace ftbench::report::phase
