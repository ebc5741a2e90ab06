// What `moex generate` and `moex bench-decode` share before the first token: strict parsing
// of their flags (threads, ISA, fused mode, prompt ids), the prompt's token ids (from
// --prompt-ids or the model's tokenizer) and the engine options, each with an Error naming
// the flag or file at fault.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/engine/backend_choice.h"
#include "model/engine/engine.h"
#include "moe/dispatch_policy.h"

namespace moex::model::engine {

// "1,2,3" -> {1,2,3}. Error naming `what` for an empty list, a non-integer or a negative id.
std::vector<int32_t> parse_prompt_ids(const std::string& text, const std::string& what);

// --threads (positive integer), --isa (scalar|avx2|avx512, must be supported here) and
// --precision (fast|standard|exact, kernels/precision.h); without --precision,
// MOEX_PRECISION is validated here, so a bad value fails before the model loads.
// --weights (map|copy, io/safetensors.h; else MOEX_WEIGHTS, validated here) and --kv-cache
// (f32|f16, backend/kv_cache_type.h; else MOEX_KV_CACHE, validated here) too.
void apply_cpu_settings(const std::optional<std::string>& threads,
                        const std::optional<std::string>& isa,
                        const std::optional<std::string>& precision,
                        const std::optional<std::string>& weights = std::nullopt,
                        const std::optional<std::string>& kv_cache = std::nullopt);

// --fused / --max-dff with MOEX_FUSED_MOE / MOEX_FUSED_MOE_MAX_DFF, strictly (moe library),
// --backend, --experts-on and --n-cpu-moe (backend_choice.h; Error when CUDA is not built in
// or has no device, or for a malformed value, naming the flag), plus the calibrated cap of the
// experts' backend's key (MoeBackend::calibration_key) if a file has one (and the CPU's for the
// layers a placement keeps on the host beside a device), and the policy's online measurement
// unless MOEX_FUSED_MOE_MEASURE=0.
EngineOptions engine_options(const std::optional<std::string>& fused,
                             const std::optional<std::string>& max_dff, int64_t context,
                             const BackendFlags& backends = {});

struct Prompt {
  std::vector<int32_t> ids;
  bool from_text = false;  // ids come from the tokenizer
};
// --prompt-ids wins over -p; -p needs DIR/tokenizer.json. Error if neither gives a token.
Prompt resolve_prompt(const std::string& model_dir, const std::optional<std::string>& text,
                      const std::optional<std::string>& ids);

// n synthetic prompt ids in [0, vocab), the same for every run (a fixed-seed generator), as
// llama-bench's pp test feeds random tokens.
std::vector<int32_t> synthetic_prompt_ids(int64_t n, int64_t vocab);

// Context needed for `prompt` + `new_tokens` positions; Error naming the model's
// max_position_embeddings when it does not fit ("prompt longer than the context").
int64_t context_for(const ModelConfig& cfg, int64_t prompt_tokens, int64_t new_tokens);

// "1.23 GiB"
std::string format_bytes(int64_t bytes);

}  // namespace moex::model::engine
