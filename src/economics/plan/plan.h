// `ftbench plan`: before renting, what a spec needs on each GPU of the catalog, how long it would
// take there and what each offer would bill for it, the cheapest offer that fits and meets a
// deadline and a budget, and what spot reclaims would add. Torch-free; every figure that is not
// measured is an estimate with its basis, and a measured report wins over a datasheet.
// docs/methodology.md, section 19, gives every formula and default.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bench/gemm_result.h"
#include "economics/cost/catalog.h"
#include "economics/cost/estimate.h"
#include "economics/cost/spot_risk.h"
#include "economics/plan/activation_checkpointing.h"
#include "economics/plan/memory.h"
#include "report/report.h"
#include "spec/run_spec.h"
#include "util/error.h"

namespace ftbench::plan {

// A plan that cannot be made as asked: an unknown --gpu, a report or gemm result it cannot use
// (another device, dtype or an implausible figure).
class PlanError : public BadInput {
 public:
  using BadInput::BadInput;
};

// Defaults, each with its source in docs/methodology.md (section 19).
inline constexpr double kHeadroom = 0.10;  // share of a GPU's memory left free
// Model FLOPs utilisation of the datasheet's dense peak: large-scale references 38-47 %
// (FIELD.md), ftbench's 8B recipe 54.5 % on an H200 (docs/benchmarks.md).
inline constexpr double kEfficiencyLow = 0.35;
inline constexpr double kEfficiencyHigh = 0.55;
// Of a measured `ftbench gemm` peak: the same H200 run reached 68 % of its measured bf16 GEMM.
inline constexpr double kGemmEfficiencyLow = 0.55;
inline constexpr double kGemmEfficiencyHigh = 0.70;
// Time to first step on a fresh machine: about 3 min on an H100, 14 min on an MI300X whose
// image was not cached (FIELD.md's reference run).
inline constexpr double kSetupSecondsLow = 180.0;
inline constexpr double kSetupSecondsHigh = 840.0;
inline constexpr double kCheckpointSaveSeconds = 5.0;  // adapters and their state, assumed
// How much wider than the GEMM gap an end-to-end gap between two GPUs may be: the project's
// reference pair (tests/fixtures/reports, FIELD.md) ran the 8B recipe on the MI300X at 0.588 of
// the H100's device FLOP/s where their public realised GEMM figures (620 and 720) say 0.861;
// 0.588 / 0.861 = 0.68.
inline constexpr double kCrossGpuGap = 0.68;

struct PlanRequest {
  spec::RunSpec spec;            // validated
  std::string gpu;               // --gpu: only this GPU ("" every catalog GPU)
  std::optional<int64_t> gpus;   // --gpus: GPUs per job (default: the fewest that fit)
  int64_t max_gpus = 8;          // --max-gpus
  std::optional<double> tokens;  // --tokens: trained tokens of the job (default: the spec's)
  std::optional<double> deadline_seconds;
  std::optional<double> budget_usd;
  std::optional<report::Report> from_report;  // a measured run of this job or a similar one
  std::string from_report_path;
  std::optional<bench::GemmResult> gemm;  // a measured `ftbench gemm` result
  std::string gemm_path;
  std::optional<double> preemptions_per_hour;  // for spot offers
  double headroom = kHeadroom;
  int64_t max_age_days = 90;  // an offer's price older than this is flagged stale
};

// What the spec needs on one GPU.
struct GpuFit {
  gpus::Gpu gpu;
  std::optional<double> memory_bytes;  // datasheet (10^9 bytes per GB); nullopt: not stated
  double usable_bytes = 0.0;           // memory x (1 - headroom)
  double needed_bytes = 0.0;           // the spec as written, on one GPU, with device overheads
  bool fits = false;
  int64_t largest_micro_batch = 0;  // with the spec's checkpointing; 0 when 1 does not fit
  // The checkpointing policy planned on this GPU: the spec's, auto's choice (checkpointing.h),
  // or the least recompute beyond the spec's that fits (needs_checkpointing).
  std::string checkpointing;
  bool needs_checkpointing = false;  // fits only with more recompute than the spec's
  // Fewest ranks splitting the base that fit (a divisor of train.grad_accum_steps, as `ftbench
  // run` requires); 0: none.
  int64_t gpus_with_sharded_base = 0;
  bool sharded_with_checkpointing = false;  // that split needs full checkpointing too
  std::string note;                         // why not, or what it takes
};

// Time of the job on `gpus` of one GPU, as a range: low is the fast end.
struct TimeEstimate {
  double tokens = 0.0;           // trained tokens of the job
  double steps = 0.0;            // optimizer steps
  double flops_per_token = 0.0;  // model FLOPs (methodology section 5), recompute included
  double tflops_low = 0.0;       // achievable per GPU, slow end
  double tflops_high = 0.0;      // fast end
  std::string throughput_basis;  // "datasheet bf16 989 x 35-55 %", "measured: report.json"...
  double setup_seconds_low = 0.0;
  double setup_seconds_high = 0.0;
  std::string setup_basis;
  double training_seconds_low = 0.0;
  double training_seconds_high = 0.0;
  double run_seconds_low = 0.0;  // setup + training
  double run_seconds_high = 0.0;
  bool measured = false;  // scaled from a report of this GPU
};

// One offer priced for the planned job.
struct OfferPlan {
  cost::Offer offer;
  int64_t gpus = 1;  // GPUs the job runs on (billed on whole instances)
  TimeEstimate time;
  cost::Cost cost_low;   // billed at the fast end of the time range
  cost::Cost cost_high;  // at the slow end
  bool fits = false;
  bool timed = true;                        // false: no throughput figure for its GPU and dtype
  bool meets_deadline = true;               // the slow end within --deadline
  bool within_budget = true;                // the slow end's bill within --budget
  std::optional<cost::SpotRisk> spot;       // spot offers with a reclaim rate
  std::optional<double> spot_expected_usd;  // billed for the expected time with reclaims
  bool risk_unpriced = false;  // a spot offer without a reclaim rate: never recommended
  // The offer's own doubts: undated, stale, billing not stated. Shown beside its price; the
  // ranking never weighs them (the bill does).
  std::string price_flags;
  std::string flags;  // price_flags, and why it is ruled out or what it takes
};

struct Plan {
  MemoryEstimate memory;  // the spec on one GPU as written (fused attention), with memory_policy
  std::string memory_policy;  // the spec's checkpointing; auto's choice on the first GPU planned
  // Every checkpointing policy: memory and FLOPs a token (checkpointing.h).
  std::vector<PolicyEstimate> policies;
  DeviceOverheads overheads;
  std::vector<GpuFit> fits;
  // Eligible first (fits, meets the deadline and the budget, a spot offer's reclaims priced),
  // each group by the slow end's bill (a spot offer's expected one); offers without a time last.
  std::vector<OfferPlan> offers;
  std::optional<std::size_t> recommended;  // index into offers
  std::string recommendation;              // why, or why none
  // The rate per GPU-hour at which the runner-up would cost what the recommended offer does.
  std::optional<double> break_even_usd_per_gpu_hour;
};

// The plan for `request` against `catalog`. Throws PlanError for a --gpu the catalog does not
// know, a report of another model or a gemm result without the spec's dtype.
Plan make_plan(const PlanRequest& request, const cost::Catalog& catalog, const cost::Date& today);

// What fits where, alone (for tests and validate): the spec on `gpu`.
GpuFit fit_on(const spec::RunSpec& spec, const gpus::Gpu& gpu, double headroom, int64_t max_gpus);

// Whether the spec fits on `gpus` of `gpu`: on one (every rank a whole copy), else with the base
// split across them, with the checkpointing policy `checkpointing` (full, selective or none).
bool fits_on(const spec::RunSpec& spec, const gpus::Gpu& gpu, double headroom, int64_t gpus,
             const std::string& checkpointing);

// Throws PlanError unless `request`'s report and gemm result can be used for its spec: a
// report of a datasheet GPU, in the spec's dtype, with a measured throughput no higher than the
// GPU's peak; a gemm result of a datasheet GPU with the spec's dtype.
void check_sources(const PlanRequest& request);

// The time of the job on `gpus` of `gpu`, with `request`'s sources of throughput, best first: a
// report of this GPU (measured); another GPU's report scaled by the two GPUs' GEMM figures (a
// gemm result of either, else the public realised ones) or, lacking those, by datasheet peaks
// (cross_gpu_range); a gemm result of this GPU; its public realised GEMM figure (bf16); its
// datasheet peak. A report's throughput is counted as the plan counts a job (padded tokens,
// recompute when its run checkpointed), so a report's own job on its own GPU and device count
// is given back its measured step time and set-up.
TimeEstimate estimate_time(const PlanRequest& request, const gpus::Gpu& gpu, int64_t gpus);

// The multipliers {slow, fast} of a measured GPU's throughput for another GPU whose GEMM figure
// (`realised`) or datasheet peak is `ratio` times the measured one's. End-to-end gaps are wider
// than GEMM gaps (FIELD.md; kCrossGpuGap): a slower GPU is between ratio x kCrossGpuGap and
// ratio, a faster one between ratio and ratio / kCrossGpuGap. A datasheet ratio is a guess: its
// slow end is kCrossGpuGap of the measured GPU, never faster than it.
// 620 / 720 (MI300X from an H100): {0.586, 0.861}; by datasheets 1307.4 / 989: {0.68, 1.94}.
std::pair<double, double> cross_gpu_range(double ratio, bool realised);

// The tokens a micro-batch of `micro_batch` rows is padded to, per row: data.seq_len, or for
// synthetic data with padding `longest` the expected longest of its rows (uniform: exact;
// lognormal: from its rounded, clipped distribution; fixed: max_tokens).
double expected_padded_length(const spec::DataSpec& data, int64_t micro_batch);

// Data-parallel efficiency of n GPUs for LoRA (FIELD.md): 1; 0.80-0.90 at 2; 0.70-0.80 at 3-4;
// 0.60-0.70 at 5-8; 0.50-0.70 beyond one node. {low, high}.
std::pair<double, double> scaling_efficiency(int64_t gpus);

}  // namespace ftbench::plan
