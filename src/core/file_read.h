// Reading a whole small file (configs, tokenizers, calibration, prompt text) without the
// traps of std::ifstream: only regular files, never blocking on a FIFO, a hard size cap.
#pragma once

#include <cstdint>
#include <string>

namespace moex {

// The bytes of the regular file at `path`. Symlinks are followed. `what` says what the file
// is for ("JSON file", "tokenizer file") and appears in messages. moex::Error naming the
// path and what was expected when the path is missing (saying which directory is missing
// when it is the parent), unreadable, a symlink loop, not a regular file (a directory, FIFO,
// device or socket is refused without reading or blocking), or longer than max_bytes: both
// the size the file reports and the bytes a read actually returns are bounded, since /proc-
// style files report size 0 and growing files outrun their size.
std::string read_small_file(const std::string& path, int64_t max_bytes, const std::string& what);

// Opens the regular file at `path` read-only for the caller to read or map (the caller closes
// the descriptor) and sets *size to its size. The same refusals and messages as
// read_small_file, without the size cap: a FIFO, device, socket or directory is refused without
// blocking ("<path>: <what> is a FIFO (named pipe); expected a regular file").
int open_regular_file(const std::string& path, const std::string& what, uint64_t* size);

}  // namespace moex
