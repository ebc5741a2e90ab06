// mx.quantize for the fp modes (mxfp4, mxfp8, nvfp4) re-implemented bit for bit, as MLX
// 0.32.4 computes it on CPU (docs/quant_formats.md). Per group, in the input dtype T:
//   s = round_T(max|w| / m), m = 6 (E2M1 elements) or 448 (E4M3 elements);
//   mx:  e = ceil(log2 s) (exact; s == 0 -> 0), code = (127 + e) mod 256 (MLX's integer cast
//        wraps: groups below about 2^-125 get codes near 255), wq = w / 2^e; a non-finite s
//        (an inf or NaN in the group; max propagates NaN) gives code 128 for F32 input and 0
//        for F16/BF16, and w / 0 (+-inf, NaN) as elements;
//   nv:  code = to_e4m3(s), wq = round_T(w / round_T(e4m3(code)));
//   element = nearest E2M1 (first table entry on ties) or to_e4m3(wq).
// Built with -ffp-contract=off like the affine quantizer.
#include <cmath>
#include <vector>

#include "core/parallel.h"
#include "quant/fp_codes.h"
#include "quant/mlx_round.h"
#include "quant/quantize.h"

namespace moex::quant::detail {

void fp_quantize_into(const QuantizeArgs& a, uint32_t* packed, uint8_t* scales) {
  const int gs = a.group_size;
  const int64_t groups = a.k / gs;
  const int64_t words = packed_row_words(a.k, a.bits);
  const float max_elem = a.bits == 4 ? 6.0f : 448.0f;
  parallel_for(a.rows, [&](int64_t lo, int64_t hi) {
    std::vector<float> w(static_cast<size_t>(gs));
    for (int64_t r = lo; r < hi; ++r) {
      uint8_t* out = reinterpret_cast<uint8_t*>(packed + r * words);
      for (int64_t g = 0; g < groups; ++g) {
        float amax = 0.0f;
        for (int j = 0; j < gs; ++j) {
          w[size_t(j)] = load_as_f32(a.data, a.dtype, size_t(r * a.k + g * gs + j));
          const float m = std::fabs(w[size_t(j)]);
          if (m > amax || m != m) amax = amax != amax ? amax : m;  // NaN, once seen, stays
        }
        const float s = mlx_round(amax / max_elem, a.dtype);
        uint8_t code;
        float divisor;
        if (a.mode == Mode::kNvfp4) {
          code = f32_to_e4m3(s);
          divisor = mlx_round(e4m3_to_f32(code), a.dtype);
        } else if (!std::isfinite(s)) {
          code = a.dtype == DType::F32 ? 128 : 0;
          divisor = 0.0f;  // MLX's 2^(int)(inf or NaN): elements become +-inf or NaN
        } else {
          const int e = s > 0.0f ? ceil_log2(s) : 0;
          code = uint8_t(unsigned(127 + e) & 0xFFu);
          divisor = std::ldexp(1.0f, e);  // exact in every input dtype (s >= its smallest value)
        }
        scales[r * groups + g] = code;
        for (int j = 0; j < gs; ++j) {
          const float wq = mlx_round(w[size_t(j)] / divisor, a.dtype);
          const int64_t i = g * gs + j;
          if (a.bits == 4) {
            const uint8_t c = nearest_e2m1(wq);
            uint8_t& byte = out[i / 2];
            byte = (i % 2 == 0) ? uint8_t((byte & 0xF0) | c) : uint8_t((byte & 0x0F) | (c << 4));
          } else {
            out[i] = f32_to_e4m3(wq);
          }
        }
      }
    }
  });
}

}  // namespace moex::quant::detail
