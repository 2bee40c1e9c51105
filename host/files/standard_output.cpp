// Checking standard output through its close; see standard_output.hpp.
#include "files/standard_output.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>

namespace loom::host {

void close_standard_output() {
  errno = 0;
  std::cout.flush();  // (synchronised with stdio: this flushes stdout and sets errno on failure)
  const bool stream_failed = std::cout.fail();
  int error = errno;
  const bool flush_failed = std::fflush(stdout) != 0;
  if (error == 0) error = errno;
  const bool earlier_failed = std::ferror(stdout) != 0;  // a write the C library kept quiet about
  bool close_failed = std::fclose(stdout) != 0;
  // Started with stdout closed (`loom ... >&-`) and never written to: nothing was lost.
  if (close_failed && errno == EBADF && !stream_failed && !flush_failed && !earlier_failed)
    close_failed = false;
  if (close_failed && error == 0) error = errno;
  if (stream_failed || flush_failed || earlier_failed || close_failed)
    throw std::runtime_error(
        std::string("standard output: write failed: ") +
        (error != 0 ? std::strerror(error) : "an earlier write failed, the output is incomplete"));
}

}  // namespace loom::host
