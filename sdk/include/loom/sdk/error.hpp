// The SDK's exception family and the conversion of exceptions into layer-0 status codes.
//
// Inside a plugin, throw `loom::Error` (or a subclass) with a message a user can act on. At the C
// boundary `boundary_call` turns any exception into a status code and copies the message into the
// host's buffer, so no exception object ever leaves the plugin.
#pragma once

#include <cstring>
#include <exception>
#include <new>
#include <stdexcept>
#include <string>

#include "loom/sdk/version.hpp"

LOOM_SDK_NAMESPACE_BEGIN

// These classes keep the plugin's default (hidden) visibility: they never cross the boundary as
// exceptions (boundary_call turns them into status codes; the host's guard catches
// std::exception), so a plugin exports nothing but its entry point.

/// Base of every error Loom raises; `status()` is the code it becomes at the C boundary.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, loom_status status = LOOM_E_INTERNAL)
      : std::runtime_error(message), status_(status) {}
  loom_status status() const noexcept { return status_; }

 private:
  loom_status status_;
};

/// A component's options are wrong. The message holds one problem per line, each starting with
/// "file:line:col: ".
class ConfigError : public Error {
 public:
  explicit ConfigError(const std::string& message) : Error(message, LOOM_E_INVALID_CONFIG) {}
};

/// A valid request that this component cannot serve on this machine (missing device, dtype...).
class UnsupportedError : public Error {
 public:
  explicit UnsupportedError(const std::string& message) : Error(message, LOOM_E_UNSUPPORTED) {}
};

/// A file could not be read or written, or its content is malformed; the message names the file.
class IoError : public Error {
 public:
  explicit IoError(const std::string& message) : Error(message, LOOM_E_IO) {}
};

/// Copies `message` into the host's buffer, NUL-terminated, truncated with "..." when too long.
inline void write_error(loom_error_buffer* buffer, const char* message) noexcept {
  if (buffer == nullptr || buffer->text == nullptr || buffer->capacity == 0) return;
  const size_t length = std::strlen(message);
  if (length < buffer->capacity) {
    std::memcpy(buffer->text, message, length + 1);
    return;
  }
  if (buffer->capacity < 8) {
    std::memcpy(buffer->text, message, buffer->capacity - 1);
    buffer->text[buffer->capacity - 1] = '\0';
    return;
  }
  const size_t keep = buffer->capacity - 4;
  std::memcpy(buffer->text, message, keep);
  std::memcpy(buffer->text + keep, "...", 4);
}

/// Runs `body` and converts whatever it throws into a status code plus a message in `error`.
/// Used by the plugin macro for every layer-0 function; `body` returns nothing.
template <typename Body>
loom_status boundary_call(loom_error_buffer* error, Body&& body) noexcept {
  try {
    body();
    return LOOM_OK;
  } catch (const Error& e) {
    write_error(error, e.what());
    return e.status();
  } catch (const std::bad_alloc&) {
    write_error(error, "out of memory");
    return LOOM_E_OUT_OF_MEMORY;
  } catch (const std::exception& e) {
    write_error(error, e.what());
    return LOOM_E_INTERNAL;
  } catch (...) {
    write_error(error, "unknown exception (not derived from std::exception)");
    return LOOM_E_INTERNAL;
  }
}

/// Human-readable name of a status code.
inline const char* status_name(loom_status status) noexcept {
  switch (status) {
    case LOOM_OK:
      return "ok";
    case LOOM_E_INVALID_CONFIG:
      return "invalid configuration";
    case LOOM_E_UNSUPPORTED:
      return "unsupported";
    case LOOM_E_OUT_OF_MEMORY:
      return "out of memory";
    case LOOM_E_DEVICE:
      return "device error";
    case LOOM_E_IO:
      return "i/o error";
    case LOOM_E_INTERNAL:
      return "internal error";
  }
  return "unknown status";
}

LOOM_SDK_NAMESPACE_END
