// Internal: maps run-time bit widths (2,3,4,5,6,8) and a look-ahead depth to a template
// instantiation of the row kernels.
#pragma once

namespace moex::cuda::detail {

// Calls f(std::integral_constant-like tag) for the given bits; returns false for other widths.
template <int B>
struct BitsTag {
  static constexpr int value = B;
};

template <typename F>
bool with_bits(int bits, F&& f) {
  switch (bits) {
    case 2: f(BitsTag<2>{}); return true;
    case 3: f(BitsTag<3>{}); return true;
    case 4: f(BitsTag<4>{}); return true;
    case 5: f(BitsTag<5>{}); return true;
    case 6: f(BitsTag<6>{}); return true;
    case 8: f(BitsTag<8>{}); return true;
    default: return false;
  }
}

// Look-ahead depth (warp_rows.cuh) of rows of b0 and b1 bits for a tiling's `stages` (2..4).
// The common widths 4 and 8 take it from the tiling (8 bits at most 3: its units need twice
// the registers); the others use a fixed depth (3 up to 4 bits, else 2), which keeps the
// number of instantiations small. Results never depend on it.
constexpr int row_depth(int b0, int b1, int stages) {
  const bool tuned = (b0 == 4 || b0 == 8) && (b1 == 4 || b1 == 8);
  if (!tuned) return b0 <= 4 && b1 <= 4 ? 3 : 2;
  const int d = stages < 2 ? 2 : stages > 4 ? 4 : stages;
  return (b0 == 8 || b1 == 8) && d > 3 ? 3 : d;
}

// Calls f(BitsTag<D>{}) for the depth row_depth(B0, B1, stages), instantiating only the
// depths that row_depth can return for B0 and B1.
template <int B0, int B1, typename F>
void with_depth(int stages, F&& f) {
  constexpr bool kTuned = (B0 == 4 || B0 == 8) && (B1 == 4 || B1 == 8);
  if constexpr (!kTuned) {
    f(BitsTag<row_depth(B0, B1, 2)>{});
  } else {
    switch (row_depth(B0, B1, stages)) {
      case 2: f(BitsTag<2>{}); break;
      case 3: f(BitsTag<3>{}); break;
      default:
        if constexpr (B0 == 4 && B1 == 4) f(BitsTag<4>{});
        else f(BitsTag<3>{});
        break;
    }
  }
}

}  // namespace moex::cuda::detail
