// Shared by the mixers' tests (mixer_math_test.cc on the CPU, cuda_mixer_ops_test.cc on the
// GPU): the derived bound of the Mamba-2 scan's device results (checked on the CPU against
// decays perturbed as far as expf may be off, and used by the gpu test).
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "backend/cuda/ops/ops_test_util.h"
#include "backend/cpu/ssm_scan.h"

namespace moex::cuda::ops::testing {

// A subnormal result is rounded to a multiple of 2^-149, not relatively: the floor of the
// relative bounds (two such roundings).
inline const double kSubnormalFloor = std::ldexp(1.0, -148);

// Bounds on |device - CPU| of the outputs and of the final state of a scan from a.state (a
// host copy, advanced here as the CPU op advances it). The only difference is the decay:
// e^(dt A) by CUDA's expf (2 ulp) and the C library's (1 ulp), <= 6u apart relatively. With
// E a state element's bound before a step, S its CPU value before and S' after:
//   S decay      differs by <= decay ((1 + 6u) E + 6u |S|) exactly, 2u decay |S| more rounded;
//   + bx B       (the same bits on both sides) rounds once per side: 2u |S'| more;
// so E' = (1 + 9u) decay E + 8u decay |S| + 2u |S'| (the 9u covering the cross terms). The
// output sum_n S'_n C_n left to right: sum E'_n |C_n| (1 + u) plus 2u |S'_n C_n| per product and
// 2u per partial sum (each below sum |S' C|): (2N + 2) u sum |S' C|; + D x rounds once per side.
inline void ssm_bound(const ::moex::ops::SsmScanArgs& a, std::vector<double>& out_bound,
                      std::vector<double>& state_bound) {
  const int64_t H = a.heads, Dh = a.head_dim, N = a.state_dim, per_group = a.heads / a.groups;
  state_bound.assign(size_t(H * Dh * N), 0.0);
  out_bound.assign(size_t(a.steps * H * Dh), 0.0);
  for (int64_t t = 0; t < a.steps; ++t)
    for (int64_t h = 0; h < H; ++h) {
      const float dt = a.dt[t * H + h];
      const float decay = std::exp(dt * a.a[h]);
      const float* B = a.b + (t * a.groups + h / per_group) * N;
      const float* C = a.c + (t * a.groups + h / per_group) * N;
      for (int64_t i = 0; i < Dh; ++i) {
        float* s = a.state + (h * Dh + i) * N;
        double* e = state_bound.data() + (h * Dh + i) * N;
        const float x = a.x[(t * H + h) * Dh + i], bx = dt * x;
        double sum_e = 0, mag = 0;
        float acc = 0.f;
        for (int64_t n = 0; n < N; ++n) {
          const float before = s[n];
          s[n] = decay * s[n] + bx * B[n];
          e[n] = (1 + 9 * kU) * decay * e[n] + 8 * kU * decay * std::fabs(before) +
                 2 * kU * std::fabs(s[n]);
          sum_e += e[n] * std::fabs(C[n]);
          mag += std::fabs(double(s[n]) * C[n]);
          acc += s[n] * C[n];
        }
        const float y = acc + a.d[h] * x;
        out_bound[size_t((t * H + h) * Dh + i)] =
            (1 + kU) * ((1 + kU) * sum_e + double(2 * N + 2) * kU * mag) + 2 * kU * std::fabs(y) +
            kSubnormalFloor;
      }
    }
}

}  // namespace moex::cuda::ops::testing
