// The wordpiece plugin: tokenizer/wordpiece (Hugging Face BertTokenizer semantics).
#include "loom/sdk/plugin.hpp"
#include "wordpiece_tokenizer.hpp"

LOOM_PLUGIN("wordpiece", "0.1.0", "WordPiece tokenizer with Hugging Face BertTokenizer semantics",
            loom::component<loom::Tokenizer, loom::wordpiece::WordpieceTokenizer>(
                "wordpiece", "0.1.0", "BERT WordPiece: clean-up, CJK, accents, punctuation, ## pieces",
                loom::offers<loom::VocabularyFile>{}))
