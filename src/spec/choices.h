// The values of the run spec's choice keys, each spelled once (docs/spec.md): the spec's check
// refuses a value outside a key's kAll with "expected one of ...", and the code that acts on a
// choice compares with these names (spec::choice::too_long::kDrop), so no module spells a
// choice its own way.
#pragma once

#include <string>
#include <vector>

namespace ftbench::spec::choice {

namespace dtype {  // model.dtype; lora.dtype adds kBase
inline constexpr const char* kBf16 = "bf16";
inline constexpr const char* kFp16 = "fp16";
inline constexpr const char* kFp32 = "fp32";
inline constexpr const char* kBase = "base";  // lora.dtype: the model's
inline const std::vector<std::string> kAll = {kBf16, kFp16, kFp32};
inline const std::vector<std::string> kLora = {kBf16, kFp16, kFp32, kBase};
}  // namespace dtype

namespace checkpointing {  // model.activation_checkpointing (true and false read as full and none)
// Every decoder layer recomputed in the backward from its input.
inline constexpr const char* kFull = "full";
// The GEMM and attention outputs kept, the elementwise work (norms, the rotary embedding, SwiGLU,
// dropout masks, residual adds) recomputed in the backward.
inline constexpr const char* kSelective = "selective";
inline constexpr const char* kNone = "none";
// The least recompute that fits the device by the plan's memory model
// (economics/plan/activation_checkpointing.h).
inline constexpr const char* kAuto = "auto";
inline const std::vector<std::string> kAll = {kFull, kSelective, kNone, kAuto};
}  // namespace checkpointing

namespace data_source {  // data.source
inline constexpr const char* kSynthetic = "synthetic";
inline constexpr const char* kFile = "file";
inline const std::vector<std::string> kAll = {kSynthetic, kFile};
}  // namespace data_source

namespace tokenizer {  // data.tokenizer: these names, or a file or folder
inline constexpr const char* kByte = "byte";
inline constexpr const char* kNone = "none";  // pre-tokenized data (data.format: tokenized)
}  // namespace tokenizer

namespace data_format {  // data.format
inline constexpr const char* kAuto = "auto";
inline constexpr const char* kAlpaca = "alpaca";
inline constexpr const char* kChat = "chat";
inline constexpr const char* kText = "text";
inline constexpr const char* kTokenized = "tokenized";
inline const std::vector<std::string> kAll = {kAuto, kAlpaca, kChat, kText, kTokenized};
}  // namespace data_format

namespace subset {  // data.subset
inline constexpr const char* kFirst = "first";
inline constexpr const char* kRandom = "random";
inline const std::vector<std::string> kAll = {kFirst, kRandom};
}  // namespace subset

namespace too_long {  // data.too_long
inline constexpr const char* kTruncate = "truncate";
inline constexpr const char* kDrop = "drop";
inline const std::vector<std::string> kAll = {kTruncate, kDrop};
}  // namespace too_long

namespace on_error {  // data.on_error
inline constexpr const char* kFail = "fail";
inline constexpr const char* kSkip = "skip";
inline const std::vector<std::string> kAll = {kFail, kSkip};
}  // namespace on_error

namespace length_distribution {  // data.length_distribution
inline constexpr const char* kFixed = "fixed";
inline constexpr const char* kUniform = "uniform";
inline constexpr const char* kLognormal = "lognormal";
inline const std::vector<std::string> kAll = {kFixed, kUniform, kLognormal};
}  // namespace length_distribution

namespace padding {  // data.padding
inline constexpr const char* kLongest = "longest";
inline constexpr const char* kMaxLength = "max_length";
inline constexpr const char* kPack = "pack";
inline const std::vector<std::string> kAll = {kLongest, kMaxLength, kPack};
}  // namespace padding

namespace lr_schedule {  // train.lr_schedule (after warm-up)
inline constexpr const char* kCosine = "cosine";
inline constexpr const char* kLinear = "linear";
inline constexpr const char* kConstant = "constant";
inline const std::vector<std::string> kAll = {kCosine, kLinear, kConstant};
}  // namespace lr_schedule

namespace device {  // backend.device
inline constexpr const char* kAuto = "auto";
inline constexpr const char* kCpu = "cpu";
inline constexpr const char* kCuda = "cuda";
inline constexpr const char* kRocm = "rocm";
inline const std::vector<std::string> kAll = {kAuto, kCpu, kCuda, kRocm};
}  // namespace device

namespace dist_backend {  // distributed.backend
inline constexpr const char* kAuto = "auto";
inline constexpr const char* kGloo = "gloo";
inline constexpr const char* kNccl = "nccl";
inline const std::vector<std::string> kAll = {kAuto, kGloo, kNccl};
}  // namespace dist_backend

namespace shard_base {                           // distributed.shard_base
inline constexpr const char* kNone = "none";     // every rank holds the whole base
inline constexpr const char* kNode = "node";     // split among a node's ranks, whole on each node
inline constexpr const char* kAllRanks = "all";  // split among every rank of the job
inline const std::vector<std::string> kAll = {kNone, kNode, kAllRanks};
}  // namespace shard_base

namespace progress {                          // output.progress
inline constexpr const char* kAuto = "auto";  // the live line on a terminal
inline constexpr const char* kOn = "on";
inline constexpr const char* kOff = "off";
inline const std::vector<std::string> kAll = {kAuto, kOn, kOff};
}  // namespace progress

}  // namespace ftbench::spec::choice
