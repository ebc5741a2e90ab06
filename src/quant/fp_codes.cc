// E2M1 / E4M3 / E8M0 conversions (see fp_codes.h). Plain integer and f32 arithmetic only.
#include "quant/fp_codes.h"

#include <cmath>
#include <cstring>

namespace moex::quant {

uint8_t nearest_e2m1(float x) {
  uint8_t best = 0;
  float best_d = std::fabs(x - kE2m1Values[0]);
  for (uint8_t c = 1; c < 16; ++c) {
    const float d = std::fabs(x - kE2m1Values[c]);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

float e4m3_to_f32(uint8_t code) {
  const bool neg = code & 0x80;
  const int e = (code >> 3) & 0xF, m = code & 0x7;
  float v;
  if (e == 0xF && m == 0x7)
    v = std::nanf("");
  else if (e == 0)
    v = std::ldexp(float(m), -9);  // subnormal: m/8 * 2^-6
  else
    v = std::ldexp(float(8 + m), e - 10);  // (1 + m/8) * 2^(e-7)
  return neg ? -v : v;
}

uint8_t f32_to_e4m3(float x) {
  if (std::isnan(x)) return 0x7E;
  const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
  const float a = std::fabs(x);
  if (a >= 448.0f) return sign | 0x7E;
  // Candidates on the E4M3 grid: the step is 2^-9 below 2^-6 (subnormals), else 2^(e-3).
  int e2 = 0;
  std::frexp(a, &e2);  // a = f * 2^e2, f in [0.5, 1): a's binade is [2^(e2-1), 2^e2)
  const int step_exp = a < 0x1p-6f ? -9 : (e2 - 1) - 3;
  const double units = double(a) / std::ldexp(1.0, step_exp);  // exact: a has 24 bits
  double r = std::nearbyint(units);                             // ties to even (default mode)
  const double rounded = r * std::ldexp(1.0, step_exp);
  // Re-encode the rounded value (it may have moved up one binade, or into the normals).
  if (rounded == 0.0) return sign;
  if (rounded < 0x1p-6) return sign | uint8_t(int(rounded * 512.0));
  int re = 0;
  const double f = std::frexp(rounded, &re);  // rounded = f * 2^re, f in [0.5, 1)
  const int exp_field = (re - 1) + 7;
  const int mant = int((f * 2.0 - 1.0) * 8.0);
  if (exp_field > 15 || (exp_field == 15 && mant == 7)) return sign | 0x7E;
  return sign | uint8_t(exp_field << 3) | uint8_t(mant);
}

float e8m0_to_f32(uint8_t code) { return std::ldexp(1.0f, int(code) - 127); }

int ceil_log2(float s) {
  int e = 0;
  const float f = std::frexp(s, &e);  // s = f * 2^e, f in [0.5, 1)
  return f == 0.5f ? e - 1 : e;
}

}  // namespace moex::quant
