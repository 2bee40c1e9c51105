// The datasets plugin: dataset/pretraining-shards, dataset/text-classification, dataset/squad.
#include "loom/sdk/plugin.hpp"

#include "pretraining_shards.hpp"
#include "squad.hpp"
#include "text_classification.hpp"

LOOM_PLUGIN("datasets", "0.1.0", "Training data: BERT pretraining shards, text classification, SQuAD",
            loom::component<loom::Dataset, loom_datasets::PretrainingShards>(
                "pretraining-shards", "0.1.0",
                "MLM+NSP batches from HDF5 shards (static or dynamic masking)",
                loom::offers<loom::DatasetVocabularyFile>{}),
            loom::component<loom::Dataset, loom_datasets::TextClassification>(
                "text-classification", "0.1.0", "GLUE TSV / JSONL sequence (pair) classification",
                loom::offers<loom::DatasetLabels>{}),
            loom::component<loom::Dataset, loom_datasets::Squad>("squad", "0.1.0",
                                                                 "SQuAD v1.1/v2.0 span extraction"))
