// Compiled with -std=c++17: every public SDK header must stand on its own in C++17.
#include "loom/sdk/communicator.hpp"
#include "loom/sdk/component_kind.hpp"
#include "loom/sdk/dataset.hpp"
#include "loom/sdk/error.hpp"
#include "loom/sdk/model_config.hpp"
#include "loom/sdk/options.hpp"
#include "loom/sdk/optimizer.hpp"
#include "loom/sdk/plugin.hpp"
#include "loom/sdk/plugin_abi.h"
#include "loom/sdk/precision.hpp"
#include "loom/sdk/schedule.hpp"
#include "loom/sdk/tokenizer.hpp"
#include "loom/sdk/version.hpp"

static_assert(__cplusplus == 201703L, "this translation unit must be compiled as C++17");
