// The bpe plugin: tokenizer/bpe (byte-level BPE with Hugging Face `tokenizers` semantics).
#include "bpe_tokenizer.hpp"
#include "loom/sdk/plugin.hpp"

LOOM_PLUGIN("bpe", "0.1.0", "Byte-level BPE tokenizer with Hugging Face tokenizers semantics",
            loom::component<loom::Tokenizer, loom::bpe::BpeTokenizer>(
                "bpe", "0.1.0", "byte-level BPE from a tokenizer.json or vocab.json + merges.txt, with offsets",
                loom::offers<loom::TokenOffsets, loom::VocabularyFile>{}))
