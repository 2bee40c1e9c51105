// `loom tokenize --vocab VOCAB.txt [--cased]`: each line of stdin → one JSON array of token ids
// (no [CLS]/[SEP]), one per line, through tokenizer/wordpiece (vocab.txt) or tokenizer/bpe
// (tokenizer.json). This is the contract other tools check against (tests/e2e/tokenize_hf_parity_test.sh compares it with Hugging Face).
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "cli_context.hpp"
#include "recipe/errors.hpp"
#include "vocab_tokenizer.hpp"

namespace loom::cli {
namespace {

struct TokenizeArguments {
  std::string vocab;
  bool cased = false;
};

void append_json_array(std::string& out, const std::vector<int32_t>& ids, size_t count) {
  out += '[';
  char number[16];
  for (size_t i = 0; i < count; ++i) {
    if (i > 0) out += ", ";
    out.append(number, static_cast<size_t>(std::snprintf(number, sizeof(number), "%d", ids[i])));
  }
  out += "]\n";
}

void tokenize_stdin(const GlobalOptions& options, const TokenizeArguments& args) {
  // A folder on standard input (`loom tokenize < dir`) reads as no lines: say so rather than print nothing.
  struct stat input {};
  if (::fstat(STDIN_FILENO, &input) == 0 && S_ISDIR(input.st_mode))
    throw host::InputError("standard input is a folder; give the text as a file or a pipe");
  auto tokenizer = create_tokenizer_for_vocab(options, args.vocab, args.cased, "loom tokenize --vocab");
  tokenizer.call([&](loom::Tokenizer& t) {
    std::ios::sync_with_stdio(false);
    std::vector<int32_t> ids(1024);
    std::string line, out;
    while (std::getline(std::cin, line)) {
      // Every id but a BPE prefix space's consumes an input byte, so one call nearly always fits.
      if (ids.size() < line.size() + 1) ids.resize(line.size() + 1);
      size_t count = t.tokenize(line.data(), line.size(), ids.data(), ids.size());
      if (count > ids.size()) {
        ids.resize(count);
        count = t.tokenize(line.data(), line.size(), ids.data(), ids.size());
      }
      append_json_array(out, ids, count);
      if (out.size() > (1u << 16)) {
        std::cout << out;
        out.clear();
      }
    }
    std::cout << out << std::flush;
    if (const uint64_t replaced = t.invalid_utf8_replacements(); replaced > 0)
      std::cerr << "loom tokenize: replaced " << replaced << " invalid UTF-8 sequence"
                << (replaced == 1 ? "" : "s") << " (dropped, as U+FFFD is)\n";
  });
}

void register_tokenize_verb(CLI::App& app, GlobalOptions& options) {
  auto args = std::make_shared<TokenizeArguments>();
  auto* verb = app.add_subcommand("tokenize", "stdin lines → one JSON array of token ids per line");
  verb->add_option("--vocab", args->vocab, "WordPiece vocabulary (vocab.txt) or byte-level BPE tokenizer.json")
      ->required()
      ->check(CLI::ExistingFile);
  verb->add_flag("--cased", args->cased, "keep case and accents (a cased vocabulary)");
  add_plugin_flags(*verb, options);
  verb->callback([&options, args] { tokenize_stdin(options, *args); });
}

const VerbRegistration registration(&register_tokenize_verb);

}  // namespace
}  // namespace loom::cli
