#include "ftbench/data/fingerprint.h"

#include <algorithm>
#include <array>
#include <memory>
#include <stdexcept>

#include <openssl/evp.h>

namespace ftbench::data {
namespace {

class Sha256 {
 public:
  Sha256() : ctx_(EVP_MD_CTX_new(), EVP_MD_CTX_free) {
    if (!ctx_ || EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) != 1) {
      throw std::runtime_error("SHA-256: cannot initialise OpenSSL digest");
    }
  }
  void update(const void* bytes, std::size_t size) {
    if (EVP_DigestUpdate(ctx_.get(), bytes, size) != 1) {
      throw std::runtime_error("SHA-256: digest update failed");
    }
  }
  void update_le(uint64_t value, int bytes) {
    std::array<unsigned char, 8> buffer{};
    for (int i = 0; i < bytes; ++i) buffer[i] = static_cast<unsigned char>(value >> (8 * i));
    update(buffer.data(), static_cast<std::size_t>(bytes));
  }
  std::string hex() {
    std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
    unsigned int size = 0;
    if (EVP_DigestFinal_ex(ctx_.get(), digest.data(), &size) != 1) {
      throw std::runtime_error("SHA-256: digest final failed");
    }
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    for (unsigned int i = 0; i < size; ++i) {
      out += kHex[digest[i] >> 4];
      out += kHex[digest[i] & 15];
    }
    return out;
  }

 private:
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx_;
};

}  // namespace

DataStats fingerprint(const Dataset& dataset, bool train_on_input) {
  DataStats stats;
  Sha256 hash;
  for (int64_t i = 0; i < dataset.size(); ++i) {
    const Example& example = dataset.at(i);
    const auto count = static_cast<int64_t>(example.tokens.size());
    if (example.loss_mask.empty()) {
      const int64_t loss_start = train_on_input ? 0 : std::min(example.prompt_tokens, count);
      hash.update_le(static_cast<uint64_t>(count), 8);
      hash.update_le(static_cast<uint64_t>(loss_start), 8);
    } else {
      // Marker -1 instead of a loss start, then one byte per token (docs/report-schema.md).
      hash.update_le(static_cast<uint64_t>(count), 8);
      hash.update_le(~uint64_t{0}, 8);
      hash.update(example.loss_mask.data(), example.loss_mask.size());
    }
    for (const int32_t token : example.tokens) {
      hash.update_le(static_cast<uint32_t>(token), 4);
    }
    stats.tokens += count;
    for (int64_t t = 1; t < count; ++t) {
      if (is_target(example, t, train_on_input)) ++stats.loss_tokens;
    }
  }
  stats.examples = dataset.size();
  stats.fingerprint = hash.hex();
  return stats;
}

}  // namespace ftbench::data
