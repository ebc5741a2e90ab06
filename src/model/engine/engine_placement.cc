// Engine::place_experts_at_open: the inputs of moe::place_experts that only the opened engine
// knows (each MoE layer's experts' bytes from the bound weights; the device memory the rest
// of the run takes), the decision, and its line on stderr.
#include <cstdio>

#include "core/error.h"
#include "model/engine/engine.h"
#include "moe/moe_backend.h"

namespace moex::model::engine {

namespace {

// Bytes of a stack of quantized (or float) matrices: packed rows with their scales and biases.
int64_t stack_bytes(const kernels::QuantWeightsView& v) {
  return v.w ? v.experts * v.n * v.format().row_bytes_with_scales(v.k) : 0;
}

// What a MoE layer's block puts on its backend: the routed experts with their linear biases
// and the shared expert (MoeBlock prepares both on the layer's backend).
int64_t layer_experts_bytes(const MoeWeights& m) {
  const kernels::MoeExpertsView& ex = m.experts;
  int64_t total = stack_bytes(ex.gate) + stack_bytes(ex.up) + stack_bytes(ex.down);
  for (const ops::FloatVec* b : {&m.gate_bias, &m.up_bias, &m.down_bias})
    total += b->size() * int64_t(sizeof(float));
  if (m.has_shared)
    for (const ops::Linear* l : {&m.shared.gate, &m.shared.up, &m.shared.down})
      if (l->w.valid()) total += l->w.weight_bytes();
  return total;
}

}  // namespace

std::vector<const moe::MoeBackend*> Engine::place_experts_at_open(
    const EngineOptions& opt, const moe::MoeBackend& device, std::optional<int64_t> free_at_open) {
  moe::PlacementInputs& in = placement_in_;
  in.request = opt.experts_placement;
  in.num_layers = cfg_.num_layers;
  in.host_only = &device == &moe::cpu_moe_backend();
  int64_t experts_bytes = 0;
  for (int64_t l = 0; l < cfg_.num_layers; ++l) {
    if (cfg_.layers[size_t(l)].ffn != FfnKind::kMoe) continue;
    in.moe_layers.push_back({l, layer_experts_bytes(w_.layers[size_t(l)].moe)});
    experts_bytes += in.moe_layers.back().bytes;
  }
  in.free_bytes = free_at_open;
  if (in.request.fit) {
    // What the rest of the run takes on the device: with the whole model there, its
    // non-expert weights, the own sequence's KV caches and the activations of a full prefill
    // chunk (allocated now: ensure_rows would take them at the first long prompt anyway);
    // and the margin in every case (the device backend's context, workspaces, allocator slack).
    int64_t reserve = moe::kDeviceMarginBytes;
    if (be_->memory() != backend::Memory::kHost) {
      ensure_rows(prefill_chunk_);
      reserve += std::max<int64_t>(0, weight_bytes_.total - experts_bytes) +
                 own_->kv_cache_bytes() + scratch_bytes() +
                 cfg_.vocab * int64_t(sizeof(float));  // the logits
    }
    in.reserve_bytes = reserve;
  }
  placement_ = moe::place_experts(in);
  std::vector<const moe::MoeBackend*> out(size_t(cfg_.num_layers), &device);
  for (const moe::MoeLayerBytes& m : in.moe_layers)
    if (!placement_.on_device[size_t(m.layer)]) out[size_t(m.layer)] = &moe::cpu_moe_backend();
  const bool asked = in.request.cpu_layers > 0 || in.request.fit;
  if (asked && (!opt.collective || opt.collective->rank() == 0))
    std::fprintf(stderr, "moex: %s%s%s\n",
                 moe::describe_placement(placement_, in, moe::backend_name(device.kind())).c_str(),
                 opt.no_device.empty() ? "" : "; ", opt.no_device.c_str());
  return out;
}

const moe::MoeBackend& Engine::experts_backend(int64_t layer) const {
  if (layer < 0 || layer >= cfg_.num_layers || !moe_[size_t(layer)])
    fail("experts_backend: layer ", layer, " of ", dir_, " is not a MoE layer");
  return moe_[size_t(layer)]->backend();
}

}  // namespace moex::model::engine
