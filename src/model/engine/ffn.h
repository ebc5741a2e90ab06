// A layer's feed-forward half as one interface, built from the layer plan by make_ffn: the
// dense MLP (SwiGLU and the other gated kinds, or Nemotron-H's relu2), or the MoE block
// (MoeFfn), with Gemma-4's dense MLP beside the experts. The engine's layer loop calls
// forward() and never asks which kind it holds.
#pragma once

#include "model/engine/scratch_grow.h"

#include <cstdint>
#include <memory>
#include <vector>

#include "backend/model_backend.h"
#include "model/engine/decode_profile.h"
#include "model/engine/model_weights.h"
#include "model/engine/moe_ffn.h"
#include "model/model_config.h"
#include "moe/moe_backend.h"

namespace moex::model::engine {

class PolicyControl;

// Scratch of the FFNs, one per engine (every layer's FFN runs on one thread at a time).
struct FfnScratch {
  ActivationBuffer gate, up;  // [rows][widest dense dff]
  ActivationBuffer branch;    // [rows][H]: the experts' output beside a parallel dense MLP
  MoeFfnScratch moe;
  // Host copies of a MoE block's input and output when the model's backend keeps activations
  // off the host (ffn.cc).
  std::vector<float> moe_host_in, moe_host_out;
  // Sizes for n rows of the widest layer of `cfg`.
  void ensure(const backend::ModelBackend& be, const ModelConfig& cfg, int64_t n);
  int64_t bytes() const;  // what the vectors hold
};

// out = norm(x) over rows: RMSNorm or LayerNorm as the config says (x may be out).
void apply_norm(const backend::ModelBackend& be, const ModelConfig& cfg, const NormWeights& w,
                const float* x, float* out, int64_t rows);

struct FfnCall {
  const float* normed = nullptr;  // [n][H]: the residual after the layer's post norm
  const float* raw = nullptr;     // [n][H]: the residual itself (Gemma-4's experts norm it)
  int64_t n = 0;
  float* out = nullptr;           // [n][H], overwritten
  moe::PathCounters* counters = nullptr;
};

class Ffn {
 public:
  virtual ~Ffn() = default;
  virtual void forward(const FfnCall& c) = 0;
  // The decode profile's group of this FFN's time.
  virtual DecodeOp op() const = 0;
  // The MoE block of this FFN, or nullptr for a dense one.
  virtual MoeFfn* moe() { return nullptr; }
};

// What make_ffn builds a layer's FFN from; everything referenced must outlive the FFN.
struct FfnParts {
  const backend::ModelBackend& be;  // the whole-model ops' backend
  const ModelConfig& cfg;
  int64_t layer = 0;
  const LayerWeights& weights;
  PolicyControl& policy;  // times the MoE layers while it measures
  // Where this layer's experts run (a MoE layer only): the experts' backend or, for a layer
  // the placement keeps on the host (--n-cpu-moe, --experts-on auto), the CPU's.
  const moe::MoeBackend& experts;
  FfnScratch& scratch;
};

// The FFN of parts.layer (nullptr when its plan has none: Nemotron-H's mixer-only blocks).
// `ep` is this process's share of an expert-parallel run.
std::unique_ptr<Ffn> make_ffn(const FfnParts& parts, std::optional<ExpertParallelLayer> ep);

}  // namespace moex::model::engine
