// Ceilings on what a spec may ask for, and the checked arithmetic of the counts that follow from
// it. A count that does not fit (in 64 bits, or under a ceiling below) is a validation error
// naming the keys, never a wrapped number that makes a run of 0 steps look "completed".
// docs/spec.md ("Limits") lists them.
#pragma once

#include <cstdint>
#include <optional>

namespace ftbench::spec {

// Model sizes, as for a checkpoint's config.json: far above any real model (Llama 3.1 405B:
// hidden 16,384, 126 layers, FFN 53,248, vocabulary 128,256; LoRA ranks up to a few hundred), low
// enough that every parameter count of a shape within them fits in 64 bits: at most
// 4096 layers x 7 x 2^48 base weights + 2 x 2^48 embeddings + 4096 x 7 x 2^16 x 2^25 adapter
// parameters < 8.2e18 < 2^63 (tested in tests/model/shape_math_test.cpp).
inline constexpr int64_t kMaxModelSize = int64_t{1} << 24;  // dim, heads, ffn_dim, vocab, seq len
inline constexpr int64_t kMaxModelLayers = 4096;
inline constexpr int64_t kMaxLoraRank = int64_t{1} << 16;
// Optimizer steps of one run: the report keeps every step (363 bytes of JSON each, measured on
// a ci-tiny report on 2026-12-01), and a checkpoint's manifest carries the report; a million
// steps (about 0.4 GB) stay inside the 1 GiB a report file may hold (util/io/whole_file.h).
inline constexpr int64_t kMaxTotalSteps = 1'000'000;
// The least peak TFLOP/s MFU is divided by (backend.peak_tflops, run --peak-tflops): 1 GFLOP/s.
// A smaller one (1e-320) made MFU an overflow, printed "MFU inf%".
inline constexpr double kMinPeakTflops = 0.001;
// Synthetic examples are generated and held in memory before the first step.
inline constexpr int64_t kMaxSyntheticExamples = int64_t{1} << 24;
// A data file's examples are held in memory too (a 98 MB file of short Alpaca records peaked at
// 2.5 GB resident on the 2-core VM, 2026-12-01): at most this many examples and tokens, so that an
// endless stream of valid records ends in an error naming the file, not in exhausted memory.
// Far above the data sets of fine-tuning (Alpaca: 52,002 examples).
inline constexpr int64_t kMaxDataExamples = int64_t{1} << 24;
inline constexpr int64_t kMaxDataTokens = int64_t{1} << 31;

// output.price as a number: USD per GPU-hour that billing takes, the bounds of
// economics/cost/billing.h (kMinUsdPerGpuHour, kMaxUsdPerGpuHour; the spec may not include cost,
// and a test holds the two pairs equal).
inline constexpr double kMinPriceUsdPerGpuHour = 1e-4;
inline constexpr double kMaxPriceUsdPerGpuHour = 1e6;

// a * b, a + b for counts >= 0: nullopt when the result does not fit in int64.
inline std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out)) return std::nullopt;
  return out;
}
inline std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t out = 0;
  if (__builtin_add_overflow(a, b, &out)) return std::nullopt;
  return out;
}

}  // namespace ftbench::spec
