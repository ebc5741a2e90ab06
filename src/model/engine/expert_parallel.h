// Expert parallelism inside the engine (src/dist/ has the placement and the collectives):
// which bytes of the checkpoint one rank reads at open (every tensor except the routed
// experts, plus its owned experts' rows), and each MoE layer's share.
#pragma once

#include <cstdint>
#include <vector>

#include "dist/collective.h"
#include "dist/expert_placement.h"
#include "io/checkpoint.h"
#include "model/engine/model_weights.h"
#include "model/engine/moe_ffn.h"
#include "model/model_config.h"
#include "model/tensor_table.h"

namespace moex::model::engine {

struct FileRange {
  const io::SafetensorsFile* file = nullptr;
  uint64_t offset = 0, bytes = 0;
};

// The ranges of the checkpoint's files this rank needs, sorted and merged per file: each
// file without the routed-expert tensors' bytes, and the rows of the experts `rank` owns
// where the engine's views point into the files (experts copied at load from a per-expert
// layout were read whole by the copy).
std::vector<FileRange> expert_parallel_reads(const io::Checkpoint& ckpt,
                                             const std::vector<TensorRecord>& tensors,
                                             const ModelConfig& cfg, const ModelWeights& w,
                                             const dist::ExpertPlacement& placement, int rank);

// A 64-bit fingerprint of what every rank must hold alike: config.json's text (a GGUF file:
// its size and first 16 MiB, the header, metadata and tokenizer), every tensor's name, dtype,
// shape and size, and the bytes of the routers and norms (small, and different between two
// random or two trained checkpoints of one shape). With `every_byte`, also every byte of every
// checkpoint file (or of the GGUF file), in file order: expert weights included, at the cost of
// reading the whole checkpoint. `model_path`: the model directory or GGUF file.
uint64_t checkpoint_fingerprint(const std::string& model_path, const io::Checkpoint& ckpt,
                                const std::vector<TensorRecord>& tensors, bool every_byte);
// Every rank passes its fingerprint; moex::Error on every rank, naming the ranks that differ
// from rank 0, when they are not all equal. `every_byte` says what the fingerprints covered
// (for the message).
void check_same_checkpoint(dist::Collective& collective, uint64_t fingerprint,
                           const std::string& dir, bool every_byte);

// Layer `layer`'s share for this rank: its owned experts, every expert's owner, and whether it
// runs the shared expert (MoE layer number moe_index modulo the ranks, spreading them).
ExpertParallelLayer expert_parallel_layer(const dist::ExpertPlacement& placement,
                                          dist::Collective& collective, int64_t layer,
                                          int64_t moe_index);

}  // namespace moex::model::engine
