// Standard output is a file Loom writes too: `loom predict`, `loom score`, `loom tokenize` and
// `loom eval` print their results there, and `> /dev/full`, a full disk or a closed pipe must not
// end with exit code 0 and nothing written. The C library buffers stdout and reports a failed
// write only to whoever asks, so the CLI asks once, at the end of every command:
// close_standard_output() flushes std::cout and stdout, closes stdout and throws naming "standard
// output" and the system's reason when any write or the close failed.
#pragma once

namespace loom::host {

/// Flushes and closes standard output; throws std::runtime_error("standard output: write failed:
/// <reason>") when a write to it failed. Nothing may be written to standard output afterwards.
void close_standard_output();

}  // namespace loom::host
