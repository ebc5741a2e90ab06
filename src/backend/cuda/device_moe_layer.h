// The expert weights of one MoE layer in device memory, uploaded once from a host
// kernels::MoeExpertsView. Packed rows keep the MLX layout byte for byte; each row's scales
// and biases are stored interleaved ({scale, bias} per group, in the checkpoint's dtype), so
// a kernel fetches both with one load.
#pragma once

#include <cstdint>

#include "backend/cuda/device.h"
#include "kernels/moe_contract.h"

// Marks the few accessors the kernels share with host code.
#if defined(__CUDACC__)
#define MOEX_HOST_DEVICE __host__ __device__
#else
#define MOEX_HOST_DEVICE
#endif

namespace moex::cuda {

// How a {scale, bias} pair is stored: two f32 (8 bytes) or two 16-bit halves of one uint32
// (scale in the low half).
enum class SbKind : int { kF32 = 0, kF16 = 1, kBF16 = 2 };

// Non-owning view of one stacked projection in device memory: experts x n rows x k inputs.
struct DeviceQuantWeights {
  const uint8_t* w = nullptr;  // row (e, r) at w + (e*n + r) * row_bytes()
  const void* sb = nullptr;    // {scale, bias} pairs, [experts][n][k/group_size]
  SbKind sb_kind = SbKind::kBF16;
  int64_t experts = 0, n = 0, k = 0;
  int bits = 4, group_size = 64;

  MOEX_HOST_DEVICE int64_t row_bytes() const { return k * bits / 8; }
  MOEX_HOST_DEVICE int64_t groups_per_row() const { return k / group_size; }
  MOEX_HOST_DEVICE int64_t sb_pair_bytes() const { return sb_kind == SbKind::kF32 ? 8 : 4; }
  // Bytes one expert's rows occupy (packed weights plus scales and biases).
  int64_t bytes_per_expert() const { return n * (row_bytes() + groups_per_row() * sb_pair_bytes()); }
};

// Owns one stacked projection in device memory.
class DeviceProjection {
 public:
  DeviceProjection() = default;
  // Validates (bits, group size, shape, dtype, null pointers; throws moex::Error naming
  // `name` and the field) and copies the view to the current device.
  static DeviceProjection upload(const kernels::QuantWeightsView& v, const char* name);
  // Pseudo-random valid weights generated on the device (benchmarks: no host copy of
  // gigabytes): random packed bits, scales of both signs giving weights of magnitude ~0.05.
  static DeviceProjection random(int64_t experts, int64_t n, int64_t k, int bits,
                                 int group_size, SbKind sb_kind, uint32_t seed);
  const DeviceQuantWeights& view() const { return view_; }
  bool empty() const { return view_.w == nullptr; }

 private:
  DeviceQuantWeights view_;
  DeviceBuffer w_, sb_;
};

// Owns the three projections of one layer. gate is empty (w == nullptr) for kSquaredReLU.
class DeviceMoeLayer {
 public:
  DeviceMoeLayer() = default;

  // Validates the view (each projection as DeviceProjection::upload, plus consistent shapes:
  // up/gate [E][Dff][Din], down [E][Din][Dff]) and copies it to the current device.
  static DeviceMoeLayer upload(const kernels::MoeExpertsView& v);

  // A layer of random weights (DeviceProjection::random) of the given shape.
  struct RandomShape {
    int64_t experts = 0, din = 0, dff = 0;
    int gate_up_bits = 4, down_bits = 4, group_size = 64;
    kernels::Activation act = kernels::Activation::kSwiGLU;
    SbKind sb_kind = SbKind::kBF16;
    uint32_t seed = 1;
  };
  static DeviceMoeLayer random(const RandomShape& s);

  const DeviceQuantWeights& gate() const { return gate_.view(); }
  const DeviceQuantWeights& up() const { return up_.view(); }
  const DeviceQuantWeights& down() const { return down_.view(); }
  kernels::Activation act() const { return act_; }
  int64_t experts() const { return up().experts; }
  int64_t din() const { return up().k; }
  int64_t dff() const { return up().n; }
  bool has_gate() const { return !gate_.empty(); }
  // Weight bytes (packed + scales/biases) one token reads per selected expert.
  int64_t bytes_per_expert() const;

 private:
  DeviceProjection gate_, up_, down_;
  kernels::Activation act_ = kernels::Activation::kSwiGLU;
};

}  // namespace moex::cuda
