// The optim plugin: optimizers over the flat parameter buffer and learning-rate schedules. Every
// optimizer also runs on a backend that offers the OptimizerSteps family (BackendOptimizer).
#include "loom/sdk/backend_optimizer.hpp"
#include "loom/sdk/plugin.hpp"
#include "loom/sdk/optimizer.hpp"
#include "loom/sdk/schedule.hpp"

#include "adamw.hpp"
#include "nvlamb.hpp"
#include "sgd.hpp"
#include "warmup_schedules.hpp"

LOOM_PLUGIN("optimizers", "0.1.0", "Optimizers over the flat parameter buffer and learning-rate schedules",
            loom::component<loom::Optimizer, loom_optim::NvLamb>(
                "nvlamb", "0.1.0", "LAMB with global grad-norm pre-normalisation (NVIDIA BERT)",
                loom::offers<loom::BackendOptimizer>{}),
            loom::component<loom::Optimizer, loom_optim::AdamW>("adamw", "0.1.0",
                                                                "fused AdamW, decoupled weight decay",
                                                                loom::offers<loom::BackendOptimizer>{}),
            loom::component<loom::Optimizer, loom_optim::Sgd>("sgd", "0.1.0", "SGD with momentum / Nesterov",
                                                              loom::offers<loom::BackendOptimizer>{}),
            loom::component<loom::Schedule, loom_optim::PolyWarmup>(
                "poly-warmup", "0.1.0", "linear warm-up, then polynomial decay to 0 (pretraining)"),
            loom::component<loom::Schedule, loom_optim::LinearWarmup>(
                "linear-warmup", "0.1.0", "linear warm-up, then linear decay to 0 (fine-tuning)"),
            loom::component<loom::Schedule, loom_optim::ConstantSchedule>(
                "constant", "0.1.0", "constant learning rate, optional linear warm-up"))
