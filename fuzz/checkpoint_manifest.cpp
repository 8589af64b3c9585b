// Fuzz target: the checkpoint manifest reader (train::parse_manifest on checkpoint.json's text,
// what `ftbench run --resume` reads first). An accepted manifest is written back and read again:
// what ftbench writes it must read.
#include <stdexcept>
#include <string>
#include <string_view>

#include "fuzz_target.h"
#include "report/report.h"
#include "report/report_io.h"
#include "train/checkpoint_files.h"

FuzzVerdict ftbench_fuzz_one(const uint8_t* data, size_t size) {
  namespace train = ftbench::train;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  train::CheckpointManifest manifest;
  try {
    manifest = train::parse_manifest(text, "fuzz-checkpoint.json");
  } catch (const train::CheckpointError&) {
    return FuzzVerdict::kRejected;
  }
  // `run --resume` reads the partial report the manifest carries next.
  try {
    ftbench::report::from_json(manifest.report, "fuzz-checkpoint.json (report)");
  } catch (const ftbench::report::ReportError&) {
  }
  const std::string written = train::to_json(manifest).dump(1);
  try {
    train::parse_manifest(written, "fuzz-written.json");
  } catch (const train::CheckpointError& e) {
    throw std::logic_error(std::string("a manifest written by to_json() is refused: ") + e.what());
  }
  return FuzzVerdict::kAccepted;
}
