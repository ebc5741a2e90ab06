// Random quantized expert weights for tests and benchmarks: random packed bytes (uniform
// quantized values) with random bf16 scales/biases chosen so every projection's output has
// about unit variance for unit-variance inputs. Not the real quantizer; no checkpoint needed.
#pragma once

#include <cstdint>
#include <memory>

#include "core/dtype.h"
#include "core/huge_pages.h"
#include "kernels/moe_contract.h"

namespace moex::moe {

struct SyntheticExpertsArgs {
  int64_t experts = 1, din = 0, dff = 0;
  int gate_bits = 4, up_bits = 4, down_bits = 4;
  int group_size = 64;      // gate and up
  int down_group_size = 0;  // 0: group_size
  DType sb_dtype = DType::BF16;
  kernels::Activation act = kernels::Activation::kSwiGLU;  // kSquaredReLU: no gate weights
  uint64_t seed = 1;
};

// Owns the buffers; view() points into them. Filling is threaded and deterministic
// (independent of the thread count). Throws Error on invalid bits / group sizes / shapes.
class SyntheticExperts {
 public:
  explicit SyntheticExperts(const SyntheticExpertsArgs& args);
  const kernels::MoeExpertsView& view() const { return view_; }
  // Bytes of one expert's gate + up + down: packed weights + scales + biases.
  int64_t expert_bytes() const { return expert_bytes_; }
  int64_t total_bytes() const { return expert_bytes_ * view_.up.experts; }

 private:
  struct Buffers {  // huge-page backed, as a weight pool should be (core/huge_pages.h)
    HugeArray<uint8_t> w, scales, biases;
  };
  void fill(kernels::QuantWeightsView& v, Buffers& b, int bits, int group_size, int64_t n,
            int64_t k, uint64_t seed);

  SyntheticExpertsArgs args_;
  Buffers gate_, up_, down_;
  kernels::MoeExpertsView view_;
  int64_t expert_bytes_ = 0;
};

// Bytes of one projection of one expert (n rows of k inputs): packed + scales + biases.
int64_t projection_bytes(const kernels::QuantWeightsView& w);

}  // namespace moex::moe
