// Which MoE layers' experts go to the experts' device and which stay on the host, from
// --n-cpu-moe N and --experts-on auto: one pure function (place_experts) over the bytes each
// layer's experts take on the device, the device's free memory and what the rest of the model
// reserves there, and the one-line report the engine prints at load.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace moex::moe {

// The part of the reserve kept free beyond what the engine counts (the device backend's
// context and library workspaces, allocator slack): a prior, not a measurement (no GPU was lent
// to measure it when this was written); scripts/gpu_check.sh runs --experts-on auto on a GPU.
inline constexpr int64_t kDeviceMarginBytes = int64_t{1} << 30;

// What the user asked for.
struct PlacementRequest {
  // --n-cpu-moe N: the experts of every MoE layer whose index is below N stay on the host.
  // N counts model layers, dense ones included, as llama.cpp's flag does (its override keeps
  // blk.0 .. blk.N-1's expert tensors on the CPU); N past the last layer keeps them all.
  int64_t cpu_layers = 0;
  // --experts-on auto: of the layers from N on, as many as the device's free memory holds go
  // to it, taken from the last MoE layer backwards (the set --n-cpu-moe M gives for the
  // smallest M that fits); the others stay on the host.
  bool fit = false;
};

// One MoE layer: its index in the model and the bytes its experts take on the device (routed
// experts with their scales and biases, and the shared expert, which runs in the same block).
struct MoeLayerBytes {
  int64_t layer = 0;
  int64_t bytes = 0;
};

struct PlacementInputs {
  PlacementRequest request;
  int64_t num_layers = 0;
  std::vector<MoeLayerBytes> moe_layers;  // ascending layer indices, each in [0, num_layers)
  // The experts' backend is the host's own (--experts-on cpu, or --backend cpu alone): there
  // is no device to place on, and every layer stays on the host whatever was asked.
  bool host_only = false;
  // Free bytes of the experts' device (fit only): nullopt when the experts' backend is no
  // device (the CPU backend), which places every layer on the host.
  std::optional<int64_t> free_bytes;
  // Bytes the rest of the run will take on that device (fit only): non-expert weights, KV
  // cache, activations and a margin; the experts get what is left of free_bytes.
  int64_t reserve_bytes = 0;
};

struct ExpertsPlacement {
  std::vector<uint8_t> on_device;  // per model layer: 1 where its experts go to the device
  int64_t host_layers = 0, device_layers = 0;  // MoE layers on each side
  int64_t device_bytes = 0;                    // of the experts placed on the device
  // The --n-cpu-moe value that gives the same set: the first device layer's index
  // (num_layers when none is on the device).
  int64_t first_device_layer = 0;
};

// The placement. Pure: the same inputs give the same result. moex::Error for inputs that
// cannot describe a model (a negative N, reserve or free figure; layers out of order or out
// of range; a layer of no bytes).
ExpertsPlacement place_experts(const PlacementInputs& in);

// "experts: layers 1-11 on cpu, 12-47 on cuda (free 70.1 GiB, reserve 3.2 GiB, experts need
// 1.2 GiB/layer)": where the experts went, MoE layers by index ranges (dense layers inside a
// range have no experts), and with fit the figures that decided it. `device` names the
// experts' backend ("cuda").
std::string describe_placement(const ExpertsPlacement& p, const PlacementInputs& in,
                               const std::string& device);

}  // namespace moex::moe
