// What `ftbench run --profile-steps` makes of a profiler's events: the per-op, per-kernel and
// per-scope tables, and the trace, from a list of timed events (torch-free: the LibTorch side,
// report/metrics/step_profiler.h, fills the list from Kineto's events). The reference script
// (scripts/reference/hf_peft_lora_step.py --profile-steps) writes the same tables from
// torch.profiler, so that scripts/profile-side-by-side.py can set the two side by side.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ftbench::metrics {

// The optimizer steps a run profiles, 1-based and inclusive: `--profile-steps 5` is {5, 5},
// `--profile-steps 5,7` is {5, 7}.
struct ProfileWindow {
  int64_t first_step = 0;
  int64_t last_step = 0;
};

// "N" or "N,M" with 1 <= N <= M <= 10^9 (whole decimal numbers, no sign, no spaces). Throws
// std::invalid_argument whose message says what was expected and what was found.
ProfileWindow parse_profile_steps(std::string_view text);

enum class ProfileEventKind {
  kOp,        // an operator on the host (aten::mm, a custom autograd node), any thread
  kScope,     // one of ftbench's scopes (forward, recompute, backward, loss, optimizer)
  kKernel,    // a kernel on the device
  kTransfer,  // a copy or fill on the device (Memcpy, Memset)
};

// One timed event. Host events nest by time on their thread (an op's children are the ops it
// called); device events run on a stream and do not nest.
struct ProfileEvent {
  std::string name;
  ProfileEventKind kind = ProfileEventKind::kOp;
  uint64_t thread = 0;  // host thread, or the device's stream
  int64_t start_ns = 0;
  int64_t duration_ns = 0;
  uint64_t flops = 0;  // the profiler's count (GEMMs, convolutions, some elementwise ops); 0: none
  // Bytes of the op's tensor inputs (numel x element size, from the shapes and dtypes the
  // profiler recorded); nullopt where an input's dtype has no known size.
  std::optional<int64_t> input_bytes;
  std::string shapes;  // the inputs' shapes as the trace shows them, "" when not recorded
};

// Bytes of an element of the dtype as LibTorch's profiler names it ("float", "c10::BFloat16",
// "long int", ...); 0 for an argument that is not a tensor ("Scalar", "", "TensorList"...);
// nullopt for a name it does not know.
std::optional<int64_t> profiler_dtype_bytes(std::string_view dtype);

// The bytes of tensor inputs of the given shapes and dtypes (one entry per argument; a
// non-tensor argument has an empty shape and a non-tensor dtype), nullopt when a dtype is
// unknown.
std::optional<int64_t> input_bytes_of(const std::vector<std::vector<int64_t>>& shapes,
                                      const std::vector<std::string>& dtypes);

// One row of the op table: every call of an op over the profiled steps.
struct OpRow {
  std::string name;
  int64_t calls = 0;
  int64_t self_ns = 0;   // its time less the time of the ops it called (what it cost itself)
  int64_t total_ns = 0;  // its time with them; an op that calls itself counts once
  uint64_t flops = 0;
  std::optional<int64_t> input_bytes;  // nullopt when any call's bytes were unknown
};

// One row of the kernel table (device kernels and transfers).
struct KernelRow {
  std::string name;
  bool transfer = false;
  int64_t calls = 0;
  int64_t total_ns = 0;
};

// One of ftbench's scopes over the profiled steps: its time with what runs inside it, and its
// own time without the scopes nested in it (the backward without its recompute).
struct ScopeRow {
  std::string name;
  int64_t calls = 0;
  int64_t total_ns = 0;
  int64_t self_ns = 0;
};

struct ProfileTables {
  std::vector<OpRow> ops;          // by self time, largest first (ties by name)
  std::vector<KernelRow> kernels;  // by total time, largest first (ties by name)
  std::vector<ScopeRow> scopes;    // by first start
  int64_t op_self_ns = 0;          // every op's self time together
  int64_t kernel_ns = 0;           // every kernel's and transfer's time together
  uint64_t flops = 0;              // every op's flops together
  // The tensor inputs of the leaf ops (ops that call no other op: those that touch the memory;
  // aten::linear's bytes are its aten::mm's), over the calls whose bytes are known, and the leaf
  // calls whose are not (an op recorded without shapes, a dtype of unknown size). Views,
  // metadata ops and allocations (aten::narrow, aten::view, aten::empty, a copy-free aten::to,
  // ...) read no bytes and count for none.
  int64_t leaf_input_bytes = 0;
  int64_t leaf_calls_without_bytes = 0;
  // The attention ops that ran (names with "attention" in them, "aten::" included), sorted.
  std::vector<std::string> attention_ops;
};

// Self time: an event's duration less the durations of the events directly inside it on its
// thread (an event inside another starts at or after its start and before its end; one that
// ends after it, by the rounding of times to whole microseconds, counts up to its end).
// Scopes and ops nest in one tree, so an op's self time excludes the ops it calls and a scope's
// the scopes and ops inside it; the op table takes the ops' self times, the scope table the
// scopes' totals and their self times among scopes only.
ProfileTables tabulate_profile(const std::vector<ProfileEvent>& events);

// The tables as CSV (RFC 4180: a name with a comma, quote or line break is quoted), one header
// line, then one row each, times in milliseconds with three decimals:
//   name,calls,self_ms,total_ms,self_share,flops,tflop_per_s,input_bytes,input_gb_per_s
// self_share: of op_self_ns; tflop_per_s and input_gb_per_s over the self time, empty where
// there is no count or no time.
std::string op_table_csv(const ProfileTables& tables);
//   name,kind,calls,total_ms,share,mean_us     (kind: kernel or transfer; share of kernel_ns)
std::string kernel_table_csv(const ProfileTables& tables);

// A Chrome trace (JSON, the format of chrome://tracing and Perfetto) of the events: "X"
// (complete) events, times in microseconds from the first event, host events on process 0 by
// thread, device events on process 1 by stream, shapes and flops in "args".
std::string chrome_trace_json(const std::vector<ProfileEvent>& events);

}  // namespace ftbench::metrics
