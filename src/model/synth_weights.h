// Synthetic weights for `moex make-model`: deterministic values from a counter-based RNG
// (the value of element i of tensor T depends only on seed, T's name and i, so generation is
// parallel and independent of chunking), scaled like a trained model so that the synthetic
// model routes like a real one (docs/background.md §5): projection weights std 0.02, norm weights
// ~1, router weights std 1/sqrt(hidden) (router logits ~N(0,1) for normalized inputs, so
// tokens spread across experts). Writing streams module by module in row chunks through
// io::ShardedCheckpointWriter; memory stays near one chunk plus one module's scales/biases.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "model/checkpoint_plan.h"
#include "model/tensor_table.h"

namespace moex::model {

// Distribution of one tensor's values: mean + std * z, z ~ approx. N(0, 1) (Irwin-Hall of four
// 16-bit uniforms, |z| < 3.47).
struct InitDist {
  float mean = 0.f;
  float std = 0.02f;
};

// The distribution make-model uses for part `part` of module `m`.
InitDist init_distribution(const ModuleSpec& m, TensorPart part, const ModelConfig& cfg);

// The stream key of a tensor name under a seed.
uint64_t synth_stream_key(uint64_t seed, const std::string& tensor_name);
// Standardized value z for element `index` of the stream `key`.
float synth_z(uint64_t key, uint64_t index);

// Fills out[0..n) with element values [first, first + n) of `tensor_name`, in f32.
void synth_fill_f32(uint64_t seed, const std::string& tensor_name, InitDist d, uint64_t first,
                    int64_t n, float* out);

struct SynthProgress {
  int64_t bytes_done = 0, bytes_total = 0;
  const std::string* module = nullptr;
};

struct SynthArgs {
  std::string out_dir;
  uint64_t seed = 0;
  uint64_t max_shard_bytes = uint64_t(5) << 30;
  int64_t chunk_values = int64_t(1) << 24;  // float values generated per chunk
  std::function<void(const SynthProgress&)> progress;  // called after every chunk (optional)
};

struct SynthResult {
  int64_t tensor_bytes = 0;
  int64_t tensors = 0;
  int64_t shards = 0;
  double seconds = 0;
};

// Writes config.json and the safetensors shards (+ index) of `plan` into args.out_dir
// (created if missing; model*.safetensors and the index of an earlier run are removed first).
// Does not write a tokenizer (see write_synthetic_model).
SynthResult write_synthetic_checkpoint(const CheckpointPlan& plan, const SynthArgs& args);

// write_synthetic_checkpoint plus the synthetic tokenizer (tokenizer.json,
// tokenizer_config.json) for the plan's vocabulary size.
SynthResult write_synthetic_model(const CheckpointPlan& plan, const SynthArgs& args);

}  // namespace moex::model
