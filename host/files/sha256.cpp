// SHA-256 via OpenSSL EVP; see sha256.hpp.
#include "files/sha256.hpp"

#include <openssl/evp.h>

#include <cstdio>
#include <memory>
#include <stdexcept>
#include <vector>

namespace loom::host {
namespace {

class Digest {
 public:
  Digest() : context_(EVP_MD_CTX_new(), &EVP_MD_CTX_free) {
    if (!context_ || EVP_DigestInit_ex(context_.get(), EVP_sha256(), nullptr) != 1)
      throw std::runtime_error("sha256: cannot initialise OpenSSL digest");
  }
  void update(const void* data, size_t size) {
    if (EVP_DigestUpdate(context_.get(), data, size) != 1) throw std::runtime_error("sha256: update failed");
  }
  std::string hex() {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int length = 0;
    if (EVP_DigestFinal_ex(context_.get(), digest, &length) != 1)
      throw std::runtime_error("sha256: final failed");
    static const char* digits = "0123456789abcdef";
    std::string out;
    for (unsigned int i = 0; i < length; ++i) {
      out += digits[digest[i] >> 4];
      out += digits[digest[i] & 15];
    }
    return out;
  }

 private:
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> context_;
};

}  // namespace

std::string sha256_hex(const void* data, size_t size) {
  Digest digest;
  digest.update(data, size);
  return digest.hex();
}

std::string sha256_file_hex(const std::filesystem::path& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!file) throw std::runtime_error(path.string() + ": cannot open for hashing");
  Digest digest;
  std::vector<char> block(1 << 20);
  for (;;) {
    const size_t got = std::fread(block.data(), 1, block.size(), file.get());
    if (got > 0) digest.update(block.data(), got);
    if (got < block.size()) break;
  }
  if (std::ferror(file.get()) != 0) throw std::runtime_error(path.string() + ": read error while hashing");
  return digest.hex();
}

}  // namespace loom::host
