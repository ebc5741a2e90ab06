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

// One case. run() calls the backend and writes each output part; the harness hands it one
// guarded buffer per part (canaries on both sides, NaN inside), so a value not written or
// written out of bounds is caught. Inputs live in the lambdas' captures and are never
// modified: a case that updates state (KV cache, recurrent state) copies it first.
struct Case {
  std::string id;              // "linear/affine4g64/rows=3,in=256,out=130"
  std::vector<int64_t> parts;  // floats per output part
  std::function<void(const ModelBackend&, float* const* outs)> run;
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
