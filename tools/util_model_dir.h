// Whether a directory holds a complete checkpoint as `moex make-model` writes it, so that the
// tools that reuse one (make-model --reuse, sweep, scripts/quickstart.sh) rebuild a directory
// left half-written by an older make-model or a copy cut short, instead of trusting it.
#pragma once

#include <string>
#include <vector>

namespace moex::tools {

// "" when `dir` is complete, else why not: config.json, tokenizer.json and
// tokenizer_config.json are regular files that parse as JSON objects; every shard (the
// index's weight_map, else model.safetensors) exists and is exactly as long as its header
// says (8 + header + the largest data offset). Reads headers only.
std::string checkpoint_incomplete_reason(const std::string& dir);

// The entries of `dir` that make-model does not write (config, tokenizer files, shards,
// index): a directory with any of them is not make-model's to replace.
std::vector<std::string> foreign_entries(const std::string& dir);

}  // namespace moex::tools
