// The AVX-512 VNNI row dot products built with VBMI (byte permutes): every bit width. The body
// is qdot_avx512.cc, compiled a second time with -mavx512vbmi.
#define MOEX_QDOT_VBMI 1
#include "kernels/qdot_avx512.cc"
