// SHA-256 of a file through OpenSSL's EVP API; see file_sha256.hpp.
#include "file_sha256.hpp"

#include <openssl/evp.h>

#include <fstream>
#include <memory>
#include <vector>

#include "loom/sdk/error.hpp"

namespace loom::wordpiece {

std::string file_sha256_hex(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw loom::ConfigError("tokenizer.vocab: cannot read '" + path + "' to hash it");
  const std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> context(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!context || EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr) != 1)
    throw loom::Error("tokenizer/wordpiece: cannot initialise OpenSSL's SHA-256");
  std::vector<char> block(1 << 16);
  while (in) {
    in.read(block.data(), static_cast<std::streamsize>(block.size()));
    const auto got = static_cast<size_t>(in.gcount());
    if (got > 0 && EVP_DigestUpdate(context.get(), block.data(), got) != 1)
      throw loom::Error("tokenizer/wordpiece: SHA-256 update failed");
  }
  if (in.bad()) throw loom::ConfigError("tokenizer.vocab: read error while hashing '" + path + "'");
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(context.get(), digest, &length) != 1)
    throw loom::Error("tokenizer/wordpiece: SHA-256 final failed");
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) hex += {kDigits[digest[i] >> 4], kDigits[digest[i] & 15]};
  return hex;
}

}  // namespace loom::wordpiece
