// libloom-jsonl-mlm.so: one dataset component, dataset/jsonl-mlm.
#include "loom/sdk/plugin.hpp"

#include "jsonl_mlm.hpp"

LOOM_PLUGIN("jsonl-mlm", "0.1.0", "JSON-lines text for MLM pre-training (example plugin built against the installed Loom SDK)",
            loom::component<loom::Dataset, loom_jsonl::JsonlMlmDataset>(
                "jsonl-mlm", "0.1.0", "JSON-lines text, tokenised on the fly, dynamic MLM masking"))
