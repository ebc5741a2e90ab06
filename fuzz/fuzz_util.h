// Shared by the fuzz targets: a private scratch directory (tmpfs when there is one) and
// writing the input into a file there, for the entry points that only take a path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace moex::fuzz {

// Created on first use, removed at exit; one per process, so parallel jobs do not collide.
const std::string& scratch_dir();

// Writes `bytes` to `path` (truncating); aborts if the write fails, since every later result
// would be meaningless.
void write_file(const std::string& path, std::string_view bytes);
void remove_file(const std::string& path);

// Splits the input at NUL bytes into at most `max_parts` pieces (the last keeps any further
// NULs). JSON text holds no raw NUL, so one input can carry a file and its companions.
std::vector<std::string_view> split_at_nul(const uint8_t* data, size_t size, size_t max_parts);

// Aborts with `what` on stderr: a broken invariant is a finding like a crash.
[[noreturn]] void invariant_failed(const char* target, const std::string& what);

}  // namespace moex::fuzz
