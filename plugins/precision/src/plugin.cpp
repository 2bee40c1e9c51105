// The precision plugin: fp32, bf16-mixed and fp16-mixed (dynamic loss scaling) policies, each
// also deciding from a backend flag (BackendPrecision).
#include "loom/sdk/backend_precision.hpp"
#include "loom/sdk/plugin.hpp"
#include "loom/sdk/precision.hpp"

#include "precision_policies.hpp"

LOOM_PLUGIN("precision", "0.1.0", "Compute precision, master weights and loss scaling policies",
            loom::component<loom::Precision, loom_precision::Fp32Precision>(
                "fp32", "0.1.0", "fp32 everywhere, no loss scaling", loom::offers<loom::BackendPrecision>{}),
            loom::component<loom::Precision, loom_precision::Bf16MixedPrecision>(
                "bf16-mixed", "0.1.0", "bf16 compute, fp32 master weights, no loss scaling",
                loom::offers<loom::BackendPrecision>{}),
            loom::component<loom::Precision, loom_precision::Fp16MixedPrecision>(
                "fp16-mixed", "0.1.0", "fp16 compute, fp32 master weights, dynamic loss scaling",
                loom::offers<loom::BackendPrecision>{}))
