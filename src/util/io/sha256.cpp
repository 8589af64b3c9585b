#include "util/io/sha256.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <vector>

#include <openssl/evp.h>

#include "util/io/whole_file.h"

namespace ftbench::io {

void Sha256::Free::operator()(evp_md_ctx_st* context) const { EVP_MD_CTX_free(context); }

Sha256::Sha256() : context_(EVP_MD_CTX_new()) {
  if (!context_ || EVP_DigestInit_ex(context_.get(), EVP_sha256(), nullptr) != 1) {
    throw std::runtime_error("SHA-256: cannot initialise OpenSSL's digest");
  }
}

void Sha256::update(const void* bytes, std::size_t size) {
  if (EVP_DigestUpdate(context_.get(), bytes, size) != 1) {
    throw std::runtime_error("SHA-256: OpenSSL's digest update failed");
  }
}

std::string Sha256::hex() {
  std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
  unsigned int size = 0;
  if (EVP_DigestFinal_ex(context_.get(), digest.data(), &size) != 1) {
    throw std::runtime_error("SHA-256: OpenSSL's digest final failed");
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * size);
  for (unsigned int i = 0; i < size; ++i) {
    out += kHex[digest[i] >> 4];
    out += kHex[digest[i] & 0x0f];
  }
  return out;
}

std::string sha256_hex(std::string_view bytes) {
  Sha256 digest;
  digest.update(bytes);
  return digest.hex();
}

std::string sha256_of_file(const std::string& path) {
  // Without blocking, then only a regular file: a FIFO in its place is refused, not waited on.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) throw FileReadError(path, std::string("cannot read: ") + std::strerror(errno));
  if (struct stat st{}; ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw FileReadError(path, "cannot read: not a regular file");
  }
  Sha256 digest;
  std::vector<char> buffer(1 << 20);
  for (;;) {
    const ssize_t n = ::read(fd, buffer.data(), buffer.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int error = errno;
      ::close(fd);
      throw FileReadError(path, std::string("cannot read: ") + std::strerror(error));
    }
    if (n == 0) break;
    digest.update(buffer.data(), static_cast<std::size_t>(n));
  }
  ::close(fd);
  return digest.hex();
}

}  // namespace ftbench::io
