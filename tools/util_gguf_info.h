// `moex inspect FILE.gguf`: a GGUF model's header, metadata (long values abbreviated) and
// tensor table (ggml type, row-major shape, bytes, part), with bytes per type at the end.
#pragma once

#include <string>

namespace moex::tools {

// Whether `path` is a regular file named *.gguf or starting with the GGUF magic (a .gguf file
// that the reader then refuses gets the reader's message, not a checkpoint directory's).
bool is_gguf_file(const std::string& path);

// Prints the listing to stdout; moex::Error for a file the reader refuses. `summary` leaves
// out the per-tensor table.
int print_gguf_info(const std::string& path, bool summary);

}  // namespace moex::tools
