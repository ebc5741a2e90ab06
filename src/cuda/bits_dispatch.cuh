// Internal: maps a run-time bit width (2,3,4,5,6,8) to a template instantiation.
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

}  // namespace moex::cuda::detail
