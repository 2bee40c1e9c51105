// The optim plugin: optimizers over the flat parameter buffer and learning-rate schedules. Every
// optimizer also runs on a backend that offers the OptimizerSteps family (BackendOptimizer), and
// has its passes write the 16-bit working copy where the backend offers that too
// (BackendOptimizerWorkingCopy).
#include "loom/sdk/backend_optimizer.hpp"
#include "loom/sdk/plugin.hpp"
#include "loom/sdk/optimizer.hpp"
#include "loom/sdk/schedule.hpp"

#include "adamw.hpp"
#include "nvlamb.hpp"
#include "sgd.hpp"
#include "warmup_schedules.hpp"

namespace {
// What every optimizer offers beside loom::Optimizer.
using OnBackend = loom::offers<loom::BackendOptimizer, loom::BackendOptimizerWorkingCopy>;
}  // namespace

LOOM_PLUGIN("optimizers", "0.1.0", "Optimizers over the flat parameter buffer and learning-rate schedules",
            loom::component<loom::Optimizer, loom_optim::NvLamb>(
                "nvlamb", "0.1.0", "LAMB with global grad-norm pre-normalisation (NVIDIA BERT)",
                OnBackend{}),
            loom::component<loom::Optimizer, loom_optim::AdamW>("adamw", "0.1.0",
                                                                "fused AdamW, decoupled weight decay",
                                                                OnBackend{}),
            loom::component<loom::Optimizer, loom_optim::Sgd>("sgd", "0.1.0", "SGD with momentum / Nesterov",
                                                              OnBackend{}),
            loom::component<loom::Schedule, loom_optim::PolyWarmup>(
                "poly-warmup", "0.1.0", "linear warm-up, then polynomial decay to 0 (pretraining)"),
            loom::component<loom::Schedule, loom_optim::LinearWarmup>(
                "linear-warmup", "0.1.0", "linear warm-up, then linear decay to 0 (fine-tuning)"),
            loom::component<loom::Schedule, loom_optim::WarmupStableDecay>(
                "warmup-stable-decay", "0.1.0", "linear warm-up, constant, then linear or 1-sqrt decay to 0"),
            loom::component<loom::Schedule, loom_optim::ConstantSchedule>(
                "constant", "0.1.0", "constant learning rate, optional linear warm-up"))
