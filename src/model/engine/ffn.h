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

// The FFN of `layer` (nullptr when its plan has none: Nemotron-H's mixer-only blocks). `policy`
// times the MoE layers while it measures; `ep` is this process's share of an expert-parallel
// run. `weights`, `policy` and `scratch` must outlive it.
std::unique_ptr<Ffn> make_ffn(const backend::ModelBackend& be, const ModelConfig& cfg,
                              int64_t layer, const LayerWeights& weights, PolicyControl& policy,
                              std::optional<ExpertParallelLayer> ep, FfnScratch& scratch);

}  // namespace moex::model::engine
