#include "run/torch/run_context.h"

#include "run/outputs.h"
#include "spec/canonical.h"

namespace ftbench::run::detail {

RunContext::RunContext(const RunOptions& options, const device::ProcessClock& clock_in,
                       const train::StopSignals& signals_in)
    : request(options.request),
      instrumentation(options.instrumentation),
      test_hooks(options.test_hooks),
      spec(options.request.spec),
      clock(clock_in),
      signals(signals_in),
      spec_fingerprint(spec::fingerprint(options.request.spec)),
      checkpoint_dir(run::checkpoint_dir(options.request.spec)),
      adapter_dir(adapter_export_dir(options.request.spec)),
      merged_dir(merged_export_dir(options.request.spec)) {}

}  // namespace ftbench::run::detail
