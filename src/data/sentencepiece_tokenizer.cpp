#include "data/sentencepiece_tokenizer.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <exception>
#include <filesystem>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "data/sentencepiece_model.h"
#include "util/io/whole_file.h"

namespace ftbench::data {
namespace {

// ftbench_spm_load_checked (src/data/spm/sentencepiece_backend.cpp). Named for what it takes, the
// bytes the checks accepted: a module of an older build, whose ftbench_spm_load took a path, is
// then refused as not ftbench's module instead of being called with the wrong arguments.
using LoadFn = Tokenizer* (*)(const char*, const char*, std::size_t, std::uint64_t, char*,
                              std::size_t);

// Where libftbench_spm.so may be: FTBENCH_SPM_LIBRARY, next to the running program, in
// ../lib/ftbench from it (installed), and in the build tree it was built in.
std::vector<std::string> module_candidates() {
  std::vector<std::string> out;
  if (const char* env = std::getenv("FTBENCH_SPM_LIBRARY"); env != nullptr && *env != '\0') {
    out.emplace_back(env);
  }
  std::error_code ec;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    out.push_back((self.parent_path() / "libftbench_spm.so").string());
    out.push_back((self.parent_path().parent_path() / "lib/ftbench/libftbench_spm.so").string());
  }
#ifdef FTBENCH_SPM_BUILD_PATH
  out.emplace_back(FTBENCH_SPM_BUILD_PATH);
#endif
  return out;
}

// RTLD_DEEPBIND lets the module find its own protobuf before LibTorch's (src/data/spm says why).
// AddressSanitizer refuses to dlopen with it (a deep-bound module would call libc's malloc and
// bypass the sanitizer's), so sanitized builds, which are torch-free and have one protobuf
// only, load the module without it. gcc says __SANITIZE_ADDRESS__, clang __has_feature.
#if defined(__SANITIZE_ADDRESS__)
#define FTBENCH_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FTBENCH_ASAN 1
#endif
#endif
#ifdef FTBENCH_ASAN
constexpr int kDlopenFlags = RTLD_NOW | RTLD_LOCAL;
#else
constexpr int kDlopenFlags = RTLD_NOW | RTLD_LOCAL | RTLD_DEEPBIND;
#endif

// Opens the module once per call; dlopen returns the same handle for a module already loaded.
// Never closed: tokenizers made by it may live until the process ends.
LoadFn load_module() {
  std::string tried;
  for (const std::string& candidate : module_candidates()) {
    std::error_code ec;
    if (!std::filesystem::exists(candidate, ec)) {
      tried += (tried.empty() ? "" : ", ") + candidate;
      continue;
    }
    void* handle = ::dlopen(candidate.c_str(), kDlopenFlags);
    if (handle == nullptr) {
      throw TokenizerError(
          fmt::format("cannot load the SentencePiece module {}: {}", candidate, ::dlerror()));
    }
    auto* load = reinterpret_cast<LoadFn>(::dlsym(handle, "ftbench_spm_load_checked"));
    if (load == nullptr) {
      throw TokenizerError(fmt::format("{} is not ftbench's SentencePiece module", candidate));
    }
    return load;
  }
  throw TokenizerError(fmt::format(
      "SentencePiece support is not installed: libftbench_spm.so not found (looked at {}; set "
      "FTBENCH_SPM_LIBRARY to its path)",
      tried));
}

// Calls into the module; an exception from it is rethrown as a TokenizerError of this side.
template <class F>
auto guarded(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const TokenizerError&) {
    throw;
  } catch (const std::exception& e) {
    throw TokenizerError(e.what());
  }
}

}  // namespace

struct SentencePieceTokenizer::Impl {
  std::string path;
  std::unique_ptr<Tokenizer> backend;
};

SentencePieceTokenizer::SentencePieceTokenizer(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}

SentencePieceTokenizer::~SentencePieceTokenizer() = default;

std::unique_ptr<SentencePieceTokenizer> SentencePieceTokenizer::from_file(const std::string& path) {
  std::string model;
  try {
    model = io::read_whole_file(path, io::kTokenizerFile);
  } catch (const io::FileReadError& e) {
    throw TokenizerError(fmt::format("{}: cannot be read: {}", path, e.reason()));
  }
  return from_serialized(model, path);
}

std::unique_ptr<SentencePieceTokenizer> SentencePieceTokenizer::from_serialized(
    std::string_view model, const std::string& path) {
  // The library trusts the model it parses (its normalizer follows the charsmap's trie without
  // a bound): it is given only what the checks accept.
  const SentencePieceModelInfo info = check_sentencepiece_model(model, path);
  const LoadFn load = load_module();
  char error[1024] = {0};
  Tokenizer* backend = load(path.c_str(), model.data(), model.size(),
                            static_cast<std::uint64_t>(info.model_type), error, sizeof(error));
  if (backend == nullptr) throw TokenizerError(error);
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  impl->backend.reset(backend);
  auto tokenizer =
      std::unique_ptr<SentencePieceTokenizer>(new SentencePieceTokenizer(std::move(impl)));
  const int64_t pieces = tokenizer->vocab_size();
  if (pieces != info.pieces) {
    throw TokenizerError(fmt::format(
        "SentencePiece model \"{}\": the library loaded {} pieces, expected the file's {}", path,
        pieces, info.pieces));
  }
  const std::pair<const char*, int32_t> special_ids[] = {
      {"BOS", tokenizer->bos_id()}, {"EOS", tokenizer->eos_id()}, {"PAD", tokenizer->pad_id()}};
  for (const auto& [name, id] : special_ids) {
    if (id < -1 || id >= pieces) {
      throw TokenizerError(
          fmt::format("SentencePiece model \"{}\": {} id: expected -1 (none) or 0 to {}, found {}",
                      path, name, pieces - 1, id));
    }
  }
  return tokenizer;
}

std::string SentencePieceTokenizer::name() const {
  return guarded([&] { return impl_->backend->name(); });
}
std::vector<int32_t> SentencePieceTokenizer::encode(std::string_view text) const {
  std::vector<int32_t> ids = guarded([&] { return impl_->backend->encode(text); });
  // The ids index the model's embedding: one outside the vocabulary is refused here.
  const int64_t pieces = impl_->backend->vocab_size();
  for (const int32_t id : ids) {
    if (id < 0 || id >= pieces) {
      throw TokenizerError(fmt::format(
          "SentencePiece model \"{}\": encoding gave id {}, expected 0 to {} (its pieces)",
          impl_->path, id, pieces - 1));
    }
  }
  return ids;
}
std::string SentencePieceTokenizer::decode(const std::vector<int32_t>& ids) const {
  return guarded([&] { return impl_->backend->decode(ids); });
}
int64_t SentencePieceTokenizer::vocab_size() const { return impl_->backend->vocab_size(); }
int32_t SentencePieceTokenizer::bos_id() const { return impl_->backend->bos_id(); }
int32_t SentencePieceTokenizer::eos_id() const { return impl_->backend->eos_id(); }
int32_t SentencePieceTokenizer::pad_id() const { return impl_->backend->pad_id(); }
std::optional<int32_t> SentencePieceTokenizer::token_id(std::string_view token) const {
  return impl_->backend->token_id(token);
}

}  // namespace ftbench::data
