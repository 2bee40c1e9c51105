// SHA-256 through OpenSSL's EVP API; see files_sha256.hpp.
#include "files_sha256.hpp"

#include <openssl/evp.h>

#include <fstream>
#include <memory>

#include "loom/sdk/error.hpp"

namespace loom::bpe {

std::string files_sha256_hex(const std::vector<std::string>& paths) {
  const std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> context(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  if (!context || EVP_DigestInit_ex(context.get(), EVP_sha256(), nullptr) != 1)
    throw loom::Error("tokenizer/bpe: cannot initialise OpenSSL's SHA-256");
  std::vector<char> block(1 << 16);
  for (const std::string& path : paths) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw loom::ConfigError("tokenizer.vocab: cannot read '" + path + "' to hash it");
    while (in) {
      in.read(block.data(), static_cast<std::streamsize>(block.size()));
      const auto got = static_cast<size_t>(in.gcount());
      if (got > 0 && EVP_DigestUpdate(context.get(), block.data(), got) != 1)
        throw loom::Error("tokenizer/bpe: SHA-256 update failed");
    }
    if (in.bad()) throw loom::ConfigError("tokenizer.vocab: read error while hashing '" + path + "'");
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(context.get(), digest, &length) != 1)
    throw loom::Error("tokenizer/bpe: SHA-256 final failed");
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) hex += {kDigits[digest[i] >> 4], kDigits[digest[i] & 15]};
  return hex;
}

}  // namespace loom::bpe
