// Every qdot kernel variant the CPU can run vs the scalar reference, over a case table of
// bits x group size x scale dtype x row length (tails included), with error bounds derived
// from the data, canaries around the output, row-split invariance and guard-page reads.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <iostream>
#include <string>

#include "core/error.h"
#include "kernels/kernels_test_util.h"
#include "quant/dequantize.h"
#include "quant/format.h"

namespace moex::kernels {
namespace {

using testing::make_random_quant;
using testing::qdot_error_bound;
using testing::random_normal;

constexpr DType kSbTypes[] = {DType::BF16, DType::F16, DType::F32};
constexpr Precision kTiers[] = {Precision::kFast, Precision::kStandard, Precision::kExact};
constexpr uint32_t kCanary = 0x7fc0dead;

std::vector<int64_t> row_lengths(int gs, quant::Mode mode = quant::Mode::kAffine) {
  if (mode == quant::Mode::kGgmlKMin || mode == quant::Mode::kGgmlKZero)
    return {256, 768, 2048};  // whole super-blocks; 768: 48 or 24 groups, a 16-group tail
  switch (gs) {
    case 0:  // unquantized: any width (mlx-lm leaves a layer unquantized when its width is
             // not a multiple of the group size), so every tail of the 8- and 16-lane blocks
      return {1, 7, 15, 33, 100, 257, 2048};
    case 16:
      return {16, 48, 160, 544};
    case 32:
      return {32, 96, 160, 544};
    case 64:
      return {64, 320, 1024};
    default:
      return {128, 384, 2048};
  }
}

// Outputs of kern for rows [r0, r1) of expert e, surrounded by canaries that must survive.
std::vector<float> run_rows(const QdotKernel& kern, const QuantWeightsView& w, int64_t e,
                            int64_t r0, int64_t r1, const void* px) {
  std::vector<float> buf(size_t(r1 - r0 + 16));
  for (float& f : buf) std::memcpy(&f, &kCanary, 4);
  kern.dot_rows({&w, e, r0, r1, px, buf.data() + 8});
  for (size_t i = 0; i < buf.size(); ++i) {
    if (i >= 8 && i < buf.size() - 8) continue;
    uint32_t u;
    std::memcpy(&u, &buf[i], 4);
    EXPECT_EQ(u, kCanary) << kern.name << " wrote outside its rows at " << int64_t(i) - 8;
  }
  return std::vector<float>(buf.begin() + 8, buf.end() - 8);
}

// The formats a kernel reads: its bits at every affine group size and scale dtype, or its
// fp mode's single format.
std::vector<quant::Format> formats_of(const QdotKernel& kern) {
  if (quant::is_fp_mode(kern.mode)) return {quant::Format::fp(kern.mode)};
  if (quant::is_ggml_mode(kern.mode)) {
    return {quant::Format::ggml(kern.mode, kern.bits, quant::ggml_group_size(kern.mode, kern.bits))};
  }
  if (kern.mode == quant::Mode::kFloat) {
    if (kern.bits == 32) return {quant::Format::dense(DType::F32)};
    return {quant::Format::dense(DType::BF16), quant::Format::dense(DType::F16)};
  }
  std::vector<quant::Format> f;
  for (int gs : quant::kValidGroupSizes)
    for (DType sb : kSbTypes) f.push_back(quant::Format::affine(kern.bits, gs, sb));
  return f;
}

bool can_run(const QdotKernel& k) {
  return isa_supported(k.isa) && (!k.needs_vbmi || detect_cpu_features().avx512vbmi);
}
bool runnable(const QdotKernel& k) { return can_run(k) && k.isa != Isa::kScalar; }

// Restores the VBMI switch.
struct VbmiGuard {
  bool saved = avx512_vbmi_active();
  ~VbmiGuard() {
    if (detect_cpu_features().avx512vbmi) set_avx512_vbmi_enabled(saved);
  }
};

TEST(Qdot, KernelListCoversEveryBitWidthAndIsa) {
  VbmiGuard guard;
  for (bool vbmi : {true, false}) {
    if (vbmi && !detect_cpu_features().avx512vbmi) continue;
    set_avx512_vbmi_enabled(vbmi);
    for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512})
      for (int bits : quant::kValidBits)
        for (Precision p : kTiers) {
          const QdotKernel& k = qdot_kernel(isa, bits, p);
          EXPECT_EQ(k.bits, bits);
          // Without VBMI, AVX-512 runs 2/4/8 bits with VNNI and 3/5/6 bits with AVX2.
          const bool avx2_instead =
              isa == Isa::kAvx512 && !vbmi && (bits == 3 || bits == 5 || bits == 6);
          const Isa want = avx2_instead ? Isa::kAvx2 : isa;
          const bool vnni = want == Isa::kAvx512;
          const bool avx2_int8 = want == Isa::kAvx2 && bits == 4;
          EXPECT_EQ(k.isa, want);
          // The VNNI kernels and AVX2's 4-bit ones quantize x, to as many int8 levels as the
          // tier says; the others keep it in f32.
          EXPECT_EQ(k.x_levels, vnni || avx2_int8 ? static_cast<int>(p) : 0);
          // The affine VNNI and AVX2 bodies take several vectors per pass; scalar does not.
          EXPECT_EQ(k.dot_rows_multi != nullptr, isa != Isa::kScalar);
          const std::string suffix =
              vnni        ? str_cat(vbmi ? "" : "_novbmi", "_", precision_name(p))
              : avx2_int8 ? str_cat("_", precision_name(p))
                          : std::string();
          EXPECT_EQ(std::string(k.name),
                    "qdot_rows_q" + std::to_string(bits) + isa_kernel_suffix(want) + suffix);
          EXPECT_EQ(k.needs_vbmi, isa == Isa::kAvx512 && vbmi);
        }
  }
  // Affine: 6 scalar, 6 AVX2 in f32 and per tier a 4-bit AVX2 integer one, and per tier 6
  // VNNI with VBMI and 3 without; the fp modes:
  // scalar and AVX2 one per mode, AVX-512 mxfp8 in f32 and per tier mxfp4 / nvfp4 on the VNNI
  // body (with and without VBMI); unquantized: float16 (F16 and BF16 elements) and float32 per
  // instruction set; the ggml block modes: 9 scalar, 9 AVX2 in f32 and per tier 2 AVX2
  // integer ones (q4_0, q4_k), and per tier 9 VNNI with VBMI and 5 (their 2-, 4- and 8-bit
  // members) without.
  EXPECT_EQ(qdot_kernels().size(), 12u + 3u + 3u * 2u + 3u * 9u + 3u + 3u + 1u + 3u * 4u + 6u + 18u + 3u * 14u);
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512})
    for (DType d : {DType::BF16, DType::F16, DType::F32}) {
      QuantWeightsView v;
      const quant::Format f = quant::Format::dense(d);
      v.mode = f.mode;
      v.bits = f.bits;
      v.sb_dtype = d;
      const QdotKernel& k = qdot_kernel(isa, v);
      EXPECT_EQ(k.mode, quant::Mode::kFloat);
      EXPECT_EQ(k.isa, isa);
      EXPECT_FALSE(k.quantizes_x());
      const char* suffix = isa == Isa::kScalar ? "_scalar" : isa == Isa::kAvx2 ? "__avx2" : "__avx512";
      EXPECT_EQ(std::string(k.name), str_cat("qdot_rows_float", f.bits, suffix));
    }
  for (bool vbmi : {true, false}) {
    if (vbmi && !detect_cpu_features().avx512vbmi) continue;
    set_avx512_vbmi_enabled(vbmi);
    for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512})
      for (quant::Mode m : {quant::Mode::kMxfp4, quant::Mode::kMxfp8, quant::Mode::kNvfp4}) {
        QuantWeightsView v;
        v.mode = m;
        v.bits = quant::fp_mode_bits(m);
        const QdotKernel& k = qdot_kernel(isa, v, Precision::kFast);
        EXPECT_EQ(k.mode, m);
        EXPECT_EQ(k.isa, isa);
        const bool vnni = isa == Isa::kAvx512 && m != quant::Mode::kMxfp8;
        EXPECT_EQ(k.x_levels, vnni ? 1 : 0);
        EXPECT_EQ(std::string(k.name),
                  std::string("qdot_rows_") + quant::mode_name(m) +
                      (isa == Isa::kScalar ? "_scalar"
                       : isa == Isa::kAvx2 ? "__avx2"
                       : vnni ? (vbmi ? "__avx512vnni_fast" : "__avx512vnni_novbmi_fast")
                              : "__avx512"));
      }
  }
}

// The kernels built without VBMI compute exactly what the VBMI ones do (only the prepared
// vector's byte reorder is written differently): same prepared bytes, same output bits.
TEST(Qdot, NoVbmiKernelsAreBitIdenticalToVbmiOnes) {
  if (!detect_cpu_features().avx512vbmi || !isa_supported(Isa::kAvx512))
    GTEST_SKIP() << "this CPU has no AVX-512 VBMI to compare against";
  VbmiGuard guard;
  uint64_t seed = 500;
  for (int bits : {2, 4, 8})
    for (Precision p : kTiers) {
      set_avx512_vbmi_enabled(true);
      const QdotKernel& with = qdot_kernel(Isa::kAvx512, bits, p);
      set_avx512_vbmi_enabled(false);
      const QdotKernel& without = qdot_kernel(Isa::kAvx512, bits, p);
      ASSERT_NE(&with, &without);
      for (int gs : quant::kValidGroupSizes)
        for (int64_t k : row_lengths(gs)) {
          SCOPED_TRACE(std::string(without.name) + "/g" + std::to_string(gs) + "/k" + std::to_string(k));
          auto q = make_random_quant(1, 9, k, bits, gs, DType::BF16, ++seed);
          const auto x = random_normal(k, 1.f, ++seed);
          PreparedVectors pa, pb;
          pa.prepare(with, x.data(), 1, k, k, gs);
          pb.prepare(without, x.data(), 1, k, k, gs);
          ASSERT_EQ(with.prepared_bytes(k, gs), without.prepared_bytes(k, gs));
          EXPECT_EQ(0, std::memcmp(pa.at(0), pb.at(0), with.prepared_bytes(k, gs)));
          const auto a = run_rows(with, q.view, 0, 0, 9, pa.at(0));
          const auto b = run_rows(without, q.view, 0, 0, 9, pb.at(0));
          EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * 4));
        }
    }
}

TEST(Qdot, FastKernelsMatchScalarReference) {
  int checked = 0;
  uint64_t seed = 1;
  for (const QdotKernel& kern : qdot_kernels()) {
    if (!runnable(kern)) continue;
    double worst_ratio = 0.0, worst_rel = 0.0;  // error / bound, error / |reference|
    for (const quant::Format& f : formats_of(kern))
        for (int64_t k : row_lengths(f.group_size, f.mode)) {
          const int gs = f.group_size;
          const std::string name = std::string(kern.name) + "/g" + std::to_string(gs) + "/" +
                                   dtype_name(f.scale_dtype) + "/k" + std::to_string(k);
          SCOPED_TRACE(name);
          const int64_t n = 7;
          auto q = make_random_quant(2, n, k, f, ++seed);
          const QdotKernel& ref = qdot_kernel(Isa::kScalar, q.view);
          auto x = random_normal(k, 1.f, ++seed);
          // One group of zeros and one outlier exercise the per-group activation scale.
          if (k >= 2 * gs) std::fill(x.begin() + gs, x.begin() + 2 * gs, 0.f);
          // A group below kTinyGroupMax (quantized to zeros) and one just above it (a tiny,
          // still normal activation scale) run through the kernels. At row level their errors
          // are far below the other groups' rounding, so this checks finiteness and the bound,
          // not which of the two treatments a kernel gives them.
          if (k >= 3 * gs)
            for (int64_t i = 2 * gs; i < 3 * gs; ++i) x[size_t(i)] *= 1e-35f;
          if (k >= 4 * gs)
            for (int64_t i = 3 * gs; i < 4 * gs; ++i) x[size_t(i)] *= 1e-27f;
          x[0] = 40.f;
          // Remainders of half a level step in the lane of x[0] (max 40): a quantizer that
          // clamps the next level at 127 instead of carrying is off by 256 of its steps here.
          if (k > 2) {  // unquantized rows can be shorter
            x[1] = 40.f / 127.f * 50.5f;
            x[2] = 40.f / 127.f * (-50.f - 100.5f / 256.f);
          }
          PreparedVectors px, pr;
          px.prepare(kern, x.data(), 1, k, k, gs);
          pr.prepare(ref, x.data(), 1, k, k, gs);
          for (int64_t e = 0; e < 2; ++e) {
            const auto want = run_rows(ref, q.view, e, 0, n, pr.at(0));
            const auto got = run_rows(kern, q.view, e, 0, n, px.at(0));
            for (int64_t r = 0; r < n; ++r) {
              const double bound = qdot_error_bound(kern, q.view, e, r, x.data());
              ASSERT_TRUE(std::isfinite(got[size_t(r)]));
              const double err = std::fabs(double(got[size_t(r)]) - want[size_t(r)]);
              EXPECT_LE(err, bound)
                  << "expert " << e << " row " << r << " want " << want[size_t(r)];
              worst_ratio = std::max(worst_ratio, err / bound);
              worst_rel = std::max(worst_rel, err / (std::fabs(want[size_t(r)]) + 1e-30));
            }
            // Row splits must not change a single bit (tails repeat rows, same arithmetic).
            for (int64_t split : {int64_t{1}, int64_t{3}, int64_t{5}}) {
              auto a = run_rows(kern, q.view, e, 0, split, px.at(0));
              auto b = run_rows(kern, q.view, e, split, n, px.at(0));
              a.insert(a.end(), b.begin(), b.end());
              EXPECT_EQ(0, std::memcmp(a.data(), got.data(), got.size() * 4)) << "split " << split;
            }
            for (int64_t r = 0; r < n; ++r) {
              const auto one = run_rows(kern, q.view, e, r, r + 1, px.at(0));
              EXPECT_EQ(0, std::memcmp(&one[0], &got[size_t(r)], 4)) << "single row " << r;
            }
          }
          ++checked;
        }
    std::cout << "[ info ] " << kern.name << ": worst error/bound " << worst_ratio
              << ", worst error/|reference| " << worst_rel << "\n";
  }
  if (checked == 0) GTEST_SKIP() << "this CPU runs no SIMD qdot variant (scalar only)";
}

// The scalar reference against an independent double-precision dot of dequantized rows
// (for the fp modes dequantized by quant::dequantize_row, MLX's own arithmetic).
TEST(Qdot, ScalarReferenceFollowsTheDefinition) {
  std::vector<quant::Format> formats;
  for (int bits : quant::kValidBits) formats.push_back(quant::Format::affine(bits, 32, DType::F32));
  for (quant::Mode m : {quant::Mode::kMxfp4, quant::Mode::kMxfp8, quant::Mode::kNvfp4})
    formats.push_back(quant::Format::fp(m));
  for (DType d : {DType::BF16, DType::F16, DType::F32}) formats.push_back(quant::Format::dense(d));
  for (const quant::Format& f : formats) {
    const int bits = f.bits;
    auto q = make_random_quant(1, 3, 96, f, 77 + uint64_t(bits) + uint64_t(f.mode));
    auto x = random_normal(96, 1.f, 5);
    PreparedVectors p;
    const QdotKernel& ref = qdot_kernel(Isa::kScalar, q.view);
    p.prepare(ref, x.data(), 1, 96, 96, f.group_size);
    float out[3];
    ref.dot_rows({&q.view, 0, 0, 3, p.at(0), out});
    for (int r = 0; r < 3; ++r) {
      std::vector<float> w(96);
      if (quant::is_fp_mode(f.mode)) {
        quant::QuantMatrixView m;
        m.w = q.view.w;
        m.scales = q.view.scales;
        m.sb_dtype = DType::U8;
        m.rows = 3;
        m.k = 96;
        m.bits = f.bits;
        m.group_size = f.group_size;
        m.mode = f.mode;
        quant::dequantize_row(m, r, w.data());
      } else {
        w = testing::dequant_row(q.view, 0, r);
      }
      double want = 0.0, mag = 0.0;
      for (int i = 0; i < 96; ++i) {
        want += double(w[size_t(i)]) * x[size_t(i)];
        mag += std::fabs(double(w[size_t(i)]) * x[size_t(i)]);
      }
      EXPECT_NEAR(out[r], want, mag * 1e-7) << quant::mode_name(f.mode) << " bits " << bits
                                             << " " << dtype_name(f.scale_dtype)
                                             << " row " << r;
    }
  }
}

// Weights, scales and biases that end right before an unmapped page: no kernel may read past
// the last byte of a row (masked loads, byte-exact tails).
TEST(Qdot, NoReadsPastTheEndOfTheWeights) {
  const size_t page = size_t(sysconf(_SC_PAGESIZE));
  auto guarded_copy = [&](const std::vector<uint8_t>& src, std::vector<void*>& maps) {
    const size_t len = (src.size() + page - 1) / page * page;
    void* m = mmap(nullptr, len + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw Error("mmap failed");
    mprotect(static_cast<char*>(m) + len, page, PROT_NONE);
    uint8_t* dst = static_cast<uint8_t*>(m) + len - src.size();
    std::memcpy(dst, src.data(), src.size());
    maps.push_back(m);
    maps.push_back(reinterpret_cast<void*>(len + page));
    return dst;
  };
  int checked = 0;
  for (const QdotKernel& kern : qdot_kernels()) {
    if (!can_run(kern)) continue;
    for (const quant::Format& f : formats_of(kern)) {
        if (f.scale_dtype == DType::F16 && !quant::is_ggml_mode(f.mode)) continue;
        const int gs = f.group_size;
        const int64_t k = gs == 0                      ? 100  // a 4-element tail
                          : quant::is_ggml_mode(f.mode) ? 768
                          : gs <= 32                    ? 96
                                                        : 3 * gs;
        auto q = make_random_quant(1, 5, k, f, 9);
        std::vector<void*> maps;
        QuantWeightsView v = q.view;
        v.w = guarded_copy(q.w, maps);
        if (v.scales) v.scales = guarded_copy(q.scales, maps);
        if (v.biases) v.biases = guarded_copy(q.biases, maps);
        auto x = random_normal(k, 1.f, 3);
        PreparedVectors px;
        px.prepare(kern, x.data(), 1, k, k, gs);
        float out[5];
        kern.dot_rows({&v, 0, 0, 5, px.at(0), out});
        for (float f : out) EXPECT_TRUE(std::isfinite(f)) << kern.name;
        for (size_t i = 0; i < maps.size(); i += 2)
          munmap(maps[i], reinterpret_cast<size_t>(maps[i + 1]));
        ++checked;
      }
  }
  EXPECT_GT(checked, 0);
}

// dot_rows_multi (through qdot_rows_multi, as gather_qmm calls it) gives every vector exactly
// the bits dot_rows gives it alone: 1 to 7 vectors (4 + 2 + 1 passes), row tails, row ranges
// that start inside a block, every tier, and outputs guarded by canaries.
TEST(Qdot, SeveralVectorsPerPassEqualOneAtATime) {
  int checked = 0;
  uint64_t seed = 900;
  for (const QdotKernel& kern : qdot_kernels()) {
    if (!runnable(kern) || !kern.dot_rows_multi) continue;
    for (const quant::Format& f : formats_of(kern)) {
      if (f.scale_dtype == DType::F16 && !quant::is_ggml_mode(f.mode)) continue;
      const int gs = f.group_size;
      for (int64_t k : row_lengths(gs, f.mode)) {
        SCOPED_TRACE(str_cat(kern.name, "/g", gs, "/", dtype_name(f.scale_dtype), "/k", k));
        const int64_t n = 11;
        auto q = make_random_quant(2, n, k, f, ++seed);
        constexpr int kMaxX = 7;
        const auto xs = random_normal(kMaxX * k, 1.f, ++seed);
        PreparedVectors px;
        px.prepare(kern, xs.data(), kMaxX, k, k, gs);
        for (int nx = 1; nx <= kMaxX; ++nx)
          for (auto [r0, r1] : {std::pair<int64_t, int64_t>{0, n}, {1, 10}, {6, 7}}) {
            const int64_t rows = r1 - r0;
            std::vector<float> buf(size_t(nx * (rows + 2)));
            for (float& v : buf) std::memcpy(&v, &kCanary, 4);
            const void* x[kMaxX];
            float* out[kMaxX];
            for (int j = 0; j < nx; ++j) {
              x[j] = px.at(j);
              out[j] = buf.data() + j * (rows + 2) + 1;
            }
            qdot_rows_multi(kern, {&q.view, 1, r0, r1, x, out, nx});
            for (int j = 0; j < nx; ++j) {
              const auto one = run_rows(kern, q.view, 1, r0, r1, px.at(j));
              EXPECT_EQ(0, std::memcmp(one.data(), out[j], size_t(rows) * 4))
                  << nx << " vectors, vector " << j << ", rows " << r0 << ".." << r1;
              uint32_t before, after;
              std::memcpy(&before, out[j] - 1, 4);
              std::memcpy(&after, out[j] + rows, 4);
              EXPECT_EQ(before, kCanary);
              EXPECT_EQ(after, kCanary);
            }
          }
        ++checked;
      }
    }
  }
  if (checked == 0) GTEST_SKIP() << "this CPU runs no kernel with a multi-vector body (AVX2, AVX-512 VNNI)";
}

// Fewer levels, larger error: on the same rows each tier's error against the scalar reference
// is within its own bound, and the normalized RMS error grows by more than 2^5 per level
// dropped (a level is 2^8; the margin allows for rows where f32 rounding dominates).
TEST(Qdot, PrecisionTiersOrderTheirErrors) {
  const int64_t k = 2048, n = 64;
  auto q = make_random_quant(1, n, k, quant::Format::affine(4, 64, DType::BF16), 31);
  const auto x = random_normal(k, 1.f, 32);
  const QdotKernel& ref = qdot_kernel(Isa::kScalar, 4);
  PreparedVectors pr;
  pr.prepare(ref, x.data(), 1, k, k, 64);
  const auto want = run_rows(ref, q.view, 0, 0, n, pr.at(0));
  int ran = 0;
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {  // the integer 4-bit kernels of each
    if (!isa_supported(isa)) continue;
    ++ran;
    double nrms[4] = {};
    for (Precision p : kTiers) {
      const QdotKernel& kern = qdot_kernel(isa, 4, p);
      ASSERT_EQ(kern.x_levels, static_cast<int>(p)) << kern.name;
      PreparedVectors px;
      px.prepare(kern, x.data(), 1, k, k, 64);
      const auto got = run_rows(kern, q.view, 0, 0, n, px.at(0));
      double sq = 0.0, ref_sq = 0.0;
      for (int64_t r = 0; r < n; ++r) {
        const double err = double(got[size_t(r)]) - want[size_t(r)];
        EXPECT_LE(std::fabs(err), qdot_error_bound(kern, q.view, 0, r, x.data())) << kern.name;
        sq += err * err;
        ref_sq += double(want[size_t(r)]) * want[size_t(r)];
      }
      nrms[static_cast<int>(p)] = std::sqrt(sq / ref_sq);
      std::cout << "[ info ] " << kern.name << ": normalized RMS error "
                << nrms[static_cast<int>(p)] << "\n";
    }
    EXPECT_GT(nrms[1], 32 * nrms[2]);
    EXPECT_GT(nrms[2], 32 * nrms[3]);
  }
  if (ran == 0) GTEST_SKIP() << "no AVX2 or AVX-512: the tiers do not apply";
}

TEST(Qdot, PrecisionNamesParseStrictly) {
  for (Precision p : kTiers) EXPECT_EQ(parse_precision(precision_name(p), "--precision"), p);
  for (const char* bad : {"", "Fast", "fast ", "2", "exactly", "std"}) {
    try {
      parse_precision(bad, "--precision");
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("--precision"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("fast, standard or exact"), std::string::npos);
    }
  }
  const Precision saved = active_precision();
  set_active_precision(Precision::kExact);
  EXPECT_EQ(qdot_kernel(active_isa(), 4).x_levels, active_isa() != Isa::kScalar ? 3 : 0);
  set_active_precision(saved);
}

}  // namespace
}  // namespace moex::kernels
