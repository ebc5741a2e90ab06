// Flag values the subcommands share: the --threads bound, list-valued flags (an empty list or
// an empty item is an error naming the flag), case-insensitive words, nearest-name hints.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/engine/backend_choice.h"

namespace moex::tools {

// The most worker threads any command accepts; each is a real thread with its own stack.
inline constexpr int kMaxThreads = 1024;

// --threads N with N in [1, kMaxThreads]; a moex::Error naming --threads otherwise.
int parse_threads_flag(std::string_view s);

// "a,b,c" -> {"a", "b", "c"}. An empty value, an empty item ("a,,b", "a,") or an item with
// surrounding spaces is a moex::Error naming `flag`; `expected` says what an item is.
std::vector<std::string> split_list_flag(std::string_view s, std::string_view flag,
                                         std::string_view expected);

// ASCII lower case: flag words (--isa AVX2, -o JSON, --fused ON) are case-insensitive.
std::string lowercase(std::string_view s);
std::optional<std::string> lowercase_opt(const std::optional<std::string>& s);

// The help of --precision, shared by every command that runs the CPU kernels.
inline constexpr const char* kPrecisionHelp =
    "activation precision of the AVX-512 kernels: fast, standard or exact (default); "
    "overrides MOEX_PRECISION (src/kernels/README.md, precision tiers)";
// The help of --weights (io/safetensors.h, WeightResidency).
inline constexpr const char* kWeightsHelp =
    "map (default: the checkpoint mapped from the page cache) or copy (read at load into "
    "anonymous 2 MB pages: steadier decode, memory of the model's size); overrides MOEX_WEIGHTS";

// The help of --kv-cache (backend/kv_cache_type.h).
inline constexpr const char* kKvCacheHelp =
    "element type of the KV cache: f32 (default) or f16 (half the memory per token of context "
    "and half the bytes long-context decode reads; keys and values rounded to f16, as "
    "llama.cpp's default cache); overrides MOEX_KV_CACHE";

// --threads, --precision, --weights, --kv-cache and, when `isa` is not null, --isa: the CPU
// options of every command that runs the model, with one help text each.
void add_cpu_run_options(CLI::App& sub, std::optional<std::string>* threads,
                         std::optional<std::string>* precision,
                         std::optional<std::string>* weights, std::optional<std::string>* isa,
                         std::optional<std::string>* kv_cache);

// --backend, --experts-on and --n-cpu-moe (model/engine/backend_choice.h), with one help
// text each.
void add_backend_options(CLI::App& sub, model::engine::BackendFlags* flags);

// The name in `names` closest to `word` (edit distance at most 2, or `word` is a prefix of
// it); "" when none is close.
std::string nearest_word(std::string_view word, const std::vector<std::string>& names);

// CLI11 check for options whose value cannot be empty (`--threads ""` is an error naming
// --threads, not the default).
CLI::Validator non_empty();

// A random 63-bit seed (std::random_device) for sampling when --seed is not given.
uint64_t random_seed();

}  // namespace moex::tools
