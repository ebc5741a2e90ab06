// The backend conformance harness (conformance_test.cc): one table of op cases, each named by
// a parameter string that is its id and its filter, run on every built backend and instruction
// set against the CPU backend at the scalar ISA, compared within the bound each op has earned.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/isa.h"
#include "backend/model_backend.h"
#include "backend/cpu/test_util.h"

namespace moex::backend::conformance {

// The inputs of one run in the memory of the backend under test: a host backend reads the
// case's vectors in place; any other gets a copy (upload), held until the run ends. Cases
// hand ops only pointers from here and from their output parts, so one table serves every
// backend.
class Stage {
 public:
  explicit Stage(const ModelBackend& b) : b_(b) {}
  const float* operator()(const std::vector<float>& host) { return place(host); }
  const int32_t* operator()(const std::vector<int32_t>& host) { return place(host); }
  // Zero-filled scratch of `floats` in the backend's memory, held until the run ends.
  float* scratch(int64_t floats) {
    held_.push_back(b_.alloc(floats * int64_t(sizeof(float))));
    return held_.back().as<float>();
  }
  // out[0..n) = host[0..n) (n < 0: all of host), for the ops that update in place.
  void fill(float* out, const std::vector<float>& host, int64_t n = -1) {
    const int64_t count = n < 0 ? int64_t(host.size()) : n;
    b_.upload(out, host.data(), count * int64_t(sizeof(float)));
  }

 private:
  template <class T>
  const T* place(const std::vector<T>& host) {
    if (b_.memory() == Memory::kHost) return host.data();
    const int64_t bytes = int64_t(host.size() * sizeof(T));
    held_.push_back(b_.alloc(bytes));
    b_.upload(held_.back().data(), host.data(), bytes);
    return held_.back().as<const T>();
  }
  const ModelBackend& b_;
  std::vector<Buffer> held_;
};

// One case. run() calls the backend and writes each output part; the harness hands it one
// guarded buffer per part (canaries on both sides, NaN inside), so a value not written or
// written out of bounds is caught. Inputs live in the lambdas' captures and are never
// modified: a case that updates state (KV cache, recurrent state) copies it first.
struct Case {
  std::string id;              // "linear/affine4g64/rows=3,in=256,out=130"
  std::vector<int64_t> parts;  // floats per output part
  std::function<void(const ModelBackend&, Stage&, float* const* outs)> run;
  // run() reads and writes host memory on every backend (the MoE backend's contract), so its
  // outputs are never staged.
  bool host_memory = false;
  // |op at `isa` - the shared oracle| per output (the parts concatenated), computed from the
  // inputs with `isa` active: an op whose code is the same at every ISA returns zeros (it
  // must then match the reference bit for bit). The tolerance of a target is its bound plus
  // the reference's; a target at the reference's own ISA must match bit for bit (only the
  // thread count differs, and every op's rows are independent of the split).
  std::function<std::vector<double>(Isa isa)> bound;
  // An identity the outputs of one run must satisfy (e.g. linear_same_input equals separate
  // linear() calls): "" when it holds, else what failed. Optional.
  std::function<std::string(const std::vector<float>& out)> invariant;
  const char* rule = "";  // how the bound is derived, printed with the row
};

// Each file of cases appends its table.
void add_linear_cases(std::vector<Case>& cases);
void add_attention_cases(std::vector<Case>& cases);
void add_elementwise_cases(std::vector<Case>& cases);
void add_mixer_cases(std::vector<Case>& cases);
void add_moe_cases(std::vector<Case>& cases);

// Deterministic inputs, uniform in [lo, hi): the ops tests' generator.
using ops::optest::random_vec;

// f32 unit roundoff.
inline constexpr double kU = 0x1p-24;

// A bound that says "the same code at every ISA": bit equality.
inline std::function<std::vector<double>(Isa)> shared_code(int64_t n) {
  return [n](Isa) { return std::vector<double>(static_cast<size_t>(n), 0.0); };
}

// The rounding of an f32 sum of d products, per unit of sum |a_i b_i|, in any order and with
// or without FMA (Higham's gamma_d, one more for the final rounding): every ISA's dot.
inline double dot_rounding(int64_t d) { return double(d + 1) * kU; }

}  // namespace moex::backend::conformance
