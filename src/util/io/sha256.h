// SHA-256 (OpenSSL's EVP), ftbench's one digest: the spec, data and weights fingerprints, the
// checkpoint manifest and its tensors, the input files a report records for a rerun. Hex digests
// are lowercase, 64 characters.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

// OpenSSL's context, declared so that this header does not bring in <openssl/evp.h>.
struct evp_md_ctx_st;  // EVP_MD_CTX

namespace ftbench::io {

// A digest fed piece by piece. std::runtime_error when OpenSSL fails (it does not for SHA-256
// short of running out of memory).
class Sha256 {
 public:
  Sha256();
  void update(const void* bytes, std::size_t size);
  void update(std::string_view bytes) { update(bytes.data(), bytes.size()); }
  // The digest of everything fed so far; once.
  std::string hex();

 private:
  struct Free {
    void operator()(evp_md_ctx_st* context) const;
  };
  std::unique_ptr<evp_md_ctx_st, Free> context_;
};

std::string sha256_hex(std::string_view bytes);

// The digest of a regular file, read a megabyte at a time. FileReadError (util/io/whole_file.h)
// naming the file when it cannot be opened or read, or is not a regular file (a FIFO in its
// place is refused, not waited on).
std::string sha256_of_file(const std::string& path);

}  // namespace ftbench::io
