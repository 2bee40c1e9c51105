// A component object made by a plugin, as the host holds it.
//
// The deleter is host code that captures the plugin library, so the library stays mapped until
// the last reference to the object is gone — even after the registry that loaded it is destroyed.
// `call` is the guard every host→plugin call goes through: whatever the plugin throws becomes a
// host PluginError naming the plugin and the component, raised while the library is still mapped;
// a loom::IoError (a data file that is missing or malformed: the user's input, not a failure of
// the run) becomes an InputError instead, and a loom::ConfigError (options that cannot work
// together with the data or the vocabulary, found when they meet) a RecipeError, both of which
// `loom` reports with exit code 2, as it does when create() finds them. A host error
// (InputError, PluginError, RecipeError, FileWriteError) raised by host code the body runs — an
// evaluation pass inside a dataset's call, a nested component's call — passes unchanged: it
// already names its source, and a second prefix would name the wrong one.
// `call` is the one idiom for guarded calls, one method or several:
// `optimizer.call([](loom::Optimizer& o) { return o.successful_steps(); })`; a named interface
// the component offers is called inside its guard too (docs/decisions/one-guarded-call-idiom.md).
#pragma once

#include <exception>
#include <memory>
#include <string>
#include <utility>

#include "files/file_writer.hpp"
#include "loom/sdk/error.hpp"
#include "loom/sdk/interfaces.hpp"
#include "recipe/errors.hpp"

namespace loom::host {

template <typename Interface>
class Component {
 public:
  Component() = default;
  /// `interfaces`: the component's query_interface (nullptr when it offers none).
  Component(std::shared_ptr<Interface> object, std::string plugin, std::string name,
            loom_query_interface_fn interfaces = nullptr)
      : object_(std::move(object)),
        plugin_(std::move(plugin)),
        name_(std::move(name)),
        interfaces_(interfaces) {}

  /// Runs `body(interface)` and converts any exception into PluginError.
  template <typename Body>
  decltype(auto) call(Body&& body) const {
    try {
      return body(*object_);
    } catch (const InputError&) {
      throw;  // host errors from host code inside `body` already name their source
    } catch (const PluginError&) {
      throw;
    } catch (const RecipeError&) {
      throw;
    } catch (const FileWriteError&) {
      throw;
    } catch (const loom::IoError& e) {
      throw InputError("plugin '" + plugin_ + "', component " + name_ + ": " + e.what());
    } catch (const loom::ConfigError& e) {
      throw RecipeError("plugin '" + plugin_ + "', component " + name_ + ": " + e.what());
    } catch (const std::exception& e) {
      throw PluginError("plugin '" + plugin_ + "', component " + name_ + ": " + e.what());
    } catch (...) {
      throw PluginError("plugin '" + plugin_ + "', component " + name_ +
                        ": threw an exception not derived from std::exception");
    }
  }

  /// The component's implementation of named interface `I` (loom/sdk/interfaces.hpp), or nullptr
  /// when it does not offer it (always, for a plugin built before SDK 0.3).
  template <typename I>
  I* find() const {
    return loom::find_interface<I>(interfaces_, static_cast<void*>(object_.get()));
  }
  /// The component's query_interface, for a block's BlockSetup (nullptr when it offers none).
  loom_query_interface_fn interfaces() const { return interfaces_; }

  explicit operator bool() const { return static_cast<bool>(object_); }
  /// The raw interface, for hot paths that wrap a whole loop in one `call`.
  Interface* get() const { return object_.get(); }
  const std::string& plugin() const { return plugin_; }
  /// "kind/name", e.g. "communicator/local".
  const std::string& name() const { return name_; }

 private:
  std::shared_ptr<Interface> object_;
  std::string plugin_;
  std::string name_;
  loom_query_interface_fn interfaces_ = nullptr;
};

}  // namespace loom::host
