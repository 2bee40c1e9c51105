// SHA-256 of the bytes of one or more files read in order, lower-case hex: the VocabularyFile
// fingerprint (tokenizer.json, or vocab.json followed by merges.txt).
#pragma once

#include <string>
#include <vector>

namespace loom::bpe {

std::string files_sha256_hex(const std::vector<std::string>& paths);

}  // namespace loom::bpe
