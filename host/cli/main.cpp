// `loom`: the command-line host. Each verb lives in its own verb_*.cpp; this file wires them and
// maps failures to exit codes (0 ok, 1 runtime failure, 2 usage or recipe error, 3 plugin load).
#include <iostream>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <CLI/CLI.hpp>

#include "cli_context.hpp"
#include "files/standard_output.hpp"
#include "recipe/errors.hpp"
#include "control/stop_request.hpp"
#include "loom/sdk/version.hpp"

namespace {

int report(const std::string& prefix, const std::string& message, int code) {
  std::cerr << prefix << message << "\n";
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace loom;
  // Before any thread exists: SIGINT/SIGTERM go to one thread of their own (stop_request.hpp).
  host::route_stop_signals_to_a_thread();
  CLI::App app{"Loom: pre-train and fine-tune BERT-family models", "loom"};
  app.set_version_flag("--version", std::string("loom ") + loom::kSdkVersion + " (plugin ABI " +
                                        std::to_string(loom::kAbiMajor) + "." +
                                        std::to_string(loom::kAbiMinor) + ")");
  app.require_subcommand(1);
  cli::GlobalOptions options;
  app.add_option("--log-level", options.log_level, "trace, debug, info, warn, error or off")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  cli::add_plugin_flags(app, options);
  for (cli::VerbRegistrar registrar : cli::registered_verbs()) registrar(app, options);

  auto logger = spdlog::stderr_color_mt("loom");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("[%l] %v");
  try {
    app.parse(argc, argv);
    // Results printed to a full disk or /dev/full must not end in exit code 0.
    host::close_standard_output();
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    return code == 0 ? host::kExitOk : host::kExitUsage;
  } catch (const host::RecipeError& e) {
    return report("error: ", e.what(), host::kExitUsage);
  } catch (const host::RunDirectoryInUse& e) {
    return report("error: ", e.what(), host::kExitUsage);
  } catch (const host::InputError& e) {
    return report("error: ", e.what(), host::kExitUsage);
  } catch (const host::PluginLoadError& e) {
    return report("error: plugin ", e.what(), host::kExitPluginLoad);
  } catch (const host::PluginError& e) {
    return report("error: ", e.what(), host::kExitRuntime);
  } catch (const std::exception& e) {
    return report("error: ", e.what(), host::kExitRuntime);
  }
  return host::kExitOk;
}
