// Implementation of the kernel test helpers (see kernels_test_util.h).
#include "kernels/kernels_test_util.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>

#include "quant/format.h"
#include "quant/fp_codes.h"
#include "quant/ggml_groups.h"

namespace moex::kernels::testing {

std::vector<float> random_normal(int64_t n, float sigma, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> nd(0.f, sigma);
  std::vector<float> v(size_t(n > 0 ? n : 0));
  for (float& f : v) f = nd(rng);
  return v;
}

RandomQuant make_random_quant(int64_t experts, int64_t n, int64_t k, int bits, int group_size,
                              DType sb, uint64_t seed) {
  RandomQuant q;
  std::mt19937_64 rng(seed);
  q.w.resize(size_t(experts * n * quant::packed_row_bytes(k, bits)));
  for (size_t i = 0; i < q.w.size(); i += 8) {  // 8 random bytes per draw
    const uint64_t v = rng();
    for (size_t j = 0; j < 8 && i + j < q.w.size(); ++j) q.w[i + j] = uint8_t(v >> (8 * j));
  }
  const int64_t ng = experts * n * (k / group_size);
  const size_t es = dtype_size(sb);
  q.scales.resize(size_t(ng) * es);
  q.biases.resize(size_t(ng) * es);
  std::normal_distribution<float> ns(0.f, 0.02f), nb(0.f, 0.05f);
  for (int64_t i = 0; i < ng; ++i) {
    store_from_f32(q.scales.data(), sb, size_t(i), ns(rng));
    store_from_f32(q.biases.data(), sb, size_t(i), nb(rng));
  }
  q.view.w = q.w.data();
  q.view.scales = q.scales.data();
  q.view.biases = q.biases.data();
  q.view.sb_dtype = sb;
  q.view.experts = experts;
  q.view.n = n;
  q.view.k = k;
  q.view.bits = bits;
  q.view.group_size = group_size;
  return q;
}

RandomQuant make_random_ggml(int64_t experts, int64_t n, int64_t k, const quant::Format& f,
                             uint64_t seed) {
  RandomQuant q = make_random_quant(experts, n, k, f.bits, f.group_size, DType::U8, seed);
  std::mt19937_64 rng(seed ^ 0x6761756dULL);
  const int64_t rows = experts * n, groups = k / f.group_size, supers = k / quant::kGgmlSuperBlock;
  const int64_t blob = f.scale_row_bytes(k);
  q.scales.assign(size_t(rows * blob), 0);
  q.biases.clear();
  // Scale codes over their whole range (6 bits for Q4_K / Q5_K / Q3_K, 4 for Q2_K, 8 for
  // Q6_K) and halves whose products give weights of about 0.02-0.05, as trained models have.
  const int code_max = f.mode == quant::Mode::kGgmlKMin ? (f.bits == 2 ? 15 : 63) : 0;
  std::uniform_int_distribution<int> code(0, code_max), k6(-32, 31), k8(-128, 127);
  std::normal_distribution<float> nd(0.f, 1.f);
  auto half = [&](uint8_t* p, float v) { store_from_f32(p, DType::F16, 0, v); };
  for (int64_t r = 0; r < rows; ++r) {
    uint8_t* b = q.scales.data() + r * blob;
    if (f.mode == quant::Mode::kGgmlQ0) {
      for (int64_t g = 0; g < groups; ++g) half(b + 2 * g, 0.005f * nd(rng));
      continue;
    }
    const bool kmin = f.mode == quant::Mode::kGgmlKMin;
    for (int64_t g = 0; g < groups; ++g) {
      b[g] = uint8_t(kmin ? code(rng) : (f.bits == 6 ? k8(rng) : k6(rng)));
      if (kmin) b[groups + g] = uint8_t(code(rng));
    }
    uint8_t* halves = b + (kmin ? 2 : 1) * groups;
    for (int64_t s = 0; s < supers; ++s) {
      half(halves + 2 * s, (kmin ? 0.0008f : 0.0003f) * std::fabs(nd(rng)));
      if (kmin) half(halves + 2 * (supers + s), 0.0008f * std::fabs(nd(rng)));
    }
  }
  q.view.scales = q.scales.data();
  q.view.biases = nullptr;
  q.view.mode = f.mode;
  q.view.sb_dtype = f.scale_dtype;
  return q;
}

RandomQuant make_random_quant(int64_t experts, int64_t n, int64_t k, const quant::Format& f,
                              uint64_t seed) {
  if (f.mode == quant::Mode::kFloat) {  // elements ~ N(0, 0.05) rounded to the dtype
    RandomQuant q;
    const DType d = f.scale_dtype;
    q.w.resize(size_t(experts * n * k) * dtype_size(d));
    const std::vector<float> v = random_normal(experts * n * k, 0.05f, seed);
    for (size_t i = 0; i < v.size(); ++i) store_from_f32(q.w.data(), d, i, v[i]);
    q.view = QuantWeightsView::dense(q.w.data(), d, experts, n, k);
    return q;
  }
  if (quant::is_ggml_mode(f.mode)) return make_random_ggml(experts, n, k, f, seed);
  if (!quant::is_fp_mode(f.mode))
    return make_random_quant(experts, n, k, f.bits, f.group_size, f.scale_dtype, seed);
  RandomQuant q = make_random_quant(experts, n, k, f.bits, f.group_size, DType::U8, seed);
  std::mt19937_64 rng(seed ^ 0x5eedf00dULL);
  if (f.bits == 8)
    for (uint8_t& c : q.w)
      if ((c & 0x7F) == 0x7F) c = uint8_t(c - 1);  // no NaN elements: 0x7E is +-448
  std::uniform_int_distribution<int> e8m0(127 - 8, 127 - 3), e4m3(0x10, 0x28);
  for (uint8_t& c : q.scales) c = uint8_t(f.mode == quant::Mode::kNvfp4 ? e4m3(rng) : e8m0(rng));
  q.biases.clear();
  q.view.scales = q.scales.data();
  q.view.biases = nullptr;
  q.view.mode = f.mode;
  return q;
}

RandomExperts make_random_experts(const ExpertsSpec& s, uint64_t seed) {
  RandomExperts r;
  const bool has_gate = s.act != Activation::kSquaredReLU;
  const bool fp = quant::is_fp_mode(s.mode) || s.mode == quant::Mode::kFloat;
  const quant::Format gate_up = s.mode == quant::Mode::kFloat ? quant::Format::dense(s.sb)
                                : fp ? quant::Format::fp(s.mode)
                                     : quant::Format::affine(s.gate_up_bits, s.group_size, s.sb);
  const quant::Format down = fp ? gate_up : quant::Format::affine(s.down_bits, s.group_size, s.sb);
  if (has_gate) r.gate = make_random_quant(s.experts, s.dff, s.din, gate_up, seed);
  r.up = make_random_quant(s.experts, s.dff, s.din, gate_up, seed + 1);
  r.down = make_random_quant(s.experts, s.din, s.dff, down, seed + 2);
  if (has_gate) r.view.gate = r.gate.view;
  r.view.up = r.up.view;
  r.view.down = r.down.view;
  r.view.act = s.act;
  return r;
}

namespace {

// Element i of an fp-mode row times its group's scale, in f32 (exact).
float fp_weight(const QuantWeightsView& w, int64_t e, int64_t r, int64_t i) {
  const uint8_t code = static_cast<const uint8_t*>(w.scales)[w.sb_offset(e, r) + i / w.group_size];
  const float s = w.mode == quant::Mode::kNvfp4 ? quant::e4m3_to_f32(code) : quant::e8m0_to_f32(code);
  const uint8_t* row = w.row(e, r);
  const float el = w.bits == 4 ? quant::kE2m1Values[quant::extract_q(row, i, 4)]
                               : quant::e4m3_to_f32(row[i]);
  return el * s;
}

}  // namespace

std::vector<float> dequant_row(const QuantWeightsView& w, int64_t e, int64_t r) {
  std::vector<float> out(size_t(w.k));
  if (w.mode == quant::Mode::kFloat) {
    for (int64_t i = 0; i < w.k; ++i) out[size_t(i)] = load_as_f32(w.row(e, r), w.sb_dtype, size_t(i));
    return out;
  }
  if (quant::is_fp_mode(w.mode)) {
    for (int64_t i = 0; i < w.k; ++i) out[size_t(i)] = fp_weight(w, e, r, i);
    return out;
  }
  if (quant::is_ggml_mode(w.mode)) {
    for (int64_t i = 0; i < w.k; ++i) {
      const quant::GgmlGroup g = quant::ggml_group(w.format(), w.scale_row(e, r), w.k, i / w.group_size);
      out[size_t(i)] = quant::ggml_value(g, quant::extract_q(w.row(e, r), i, w.bits));
    }
    return out;
  }
  const uint8_t* row = w.row(e, r);
  const int64_t sb = w.sb_offset(e, r);
  for (int64_t i = 0; i < w.k; ++i) {
    const int64_t g = i / w.group_size;
    const float s = load_as_f32(w.scales, w.sb_dtype, size_t(sb + g));
    const float b = load_as_f32(w.biases, w.sb_dtype, size_t(sb + g));
    out[size_t(i)] = s * float(quant::extract_q(row, i, w.bits)) + b;
  }
  return out;
}

double qdot_error_bound(const QdotKernel& kern, const QuantWeightsView& w, int64_t e, int64_t r,
                        const float* x) {
  if (w.mode == quant::Mode::kFloat) {
    // Exact products summed in f32 by FMA chains of at most ceil(k/8) terms per lane, then
    // at most 8 pairwise steps (accumulators and lanes): Higham's gamma_n with
    // n = ceil(k/8) + 8 times sum |w_i x_i|, plus the reference's single rounding.
    const std::vector<float> row = dequant_row(w, e, r);
    double terms = 0.0;
    for (int64_t i = 0; i < w.k; ++i) terms += std::fabs(double(row[size_t(i)]) * x[i]);
    const double n = double((w.k + 7) / 8 + 8);
    return (n + 1) * 0x1p-24 * terms + 1e-30;
  }
  if (quant::is_fp_mode(w.mode) && !kern.quantizes_x()) {  // x in f32: the f32 rounding of sums
    double terms = 0.0;
    for (int64_t i = 0; i < w.k; ++i) terms += std::fabs(double(fp_weight(w, e, r, i)) * x[i]);
    return 1e-6 * terms + 1e-30;
  }
  if (quant::is_fp_mode(w.mode)) {
    // The VNNI body computes E2M1 rows as the affine row (s/2) * u - 6 s with u = 12 + 2 value
    // in [0, 24]: the affine bound below with those terms.
    const uint8_t* codes = static_cast<const uint8_t*>(w.scales) + w.sb_offset(e, r);
    double f32_terms = 0.0, quant_term = 0.0;
    for (int64_t g = 0; g < w.k / w.group_size; ++g) {
      const double s = std::fabs(w.mode == quant::Mode::kNvfp4 ? quant::e4m3_to_f32(codes[g])
                                                               : quant::e8m0_to_f32(codes[g]));
      double maxabs = 0.0, usum = 0.0;
      for (int64_t i = g * w.group_size; i < (g + 1) * w.group_size; ++i) {
        const double u = 12.0 + 2.0 * quant::kE2m1Values[quant::extract_q(w.row(e, r), i, 4)];
        f32_terms += (s / 2 * u + 6 * s) * std::fabs(x[i]);
        maxabs = std::fmax(maxabs, std::fabs(x[i]));
        usum += u;
      }
      quant_term += s / 2 * usum * maxabs * kern.x_step();
      if (maxabs < kTinyGroupMax) quant_term += s / 2 * usum * maxabs;
    }
    return 1e-6 * f32_terms + quant_term + 1e-30;
  }
  const uint8_t* row = w.row(e, r);
  const int64_t sb = w.sb_offset(e, r);
  double f32_terms = 0.0, quant_term = 0.0;
  const bool ggml = quant::is_ggml_mode(w.mode);  // its affine form: scale and bias per group
  for (int64_t g = 0; g < w.k / w.group_size; ++g) {
    const quant::GgmlGroup gg =
        ggml ? quant::ggml_group(w.format(), w.scale_row(e, r), w.k, g) : quant::GgmlGroup{};
    const double s = std::fabs(ggml ? gg.scale : load_as_f32(w.scales, w.sb_dtype, size_t(sb + g)));
    const double b = std::fabs(ggml ? gg.bias : load_as_f32(w.biases, w.sb_dtype, size_t(sb + g)));
    double maxabs = 0.0, qsum = 0.0;
    for (int64_t i = g * w.group_size; i < (g + 1) * w.group_size; ++i) {
      const double q = quant::extract_q(row, i, w.bits);
      f32_terms += (s * q + b) * std::fabs(x[i]);
      maxabs = std::fmax(maxabs, std::fabs(x[i]));
      qsum += q;
    }
    quant_term += s * qsum * maxabs * kern.x_step();
    if (maxabs < kTinyGroupMax) quant_term += s * qsum * maxabs;  // zeroed: b * sum x stays exact
  }
  return 1e-6 * f32_terms + (kern.quantizes_x() ? quant_term : 0.0) + 1e-30;
}

double activation_reference(Activation act, double g, double u) {
  switch (act) {
    case Activation::kSwiGLU:
      return g / (1.0 + std::exp(-g)) * u;
    case Activation::kGeGLU:
      return 0.5 * g *
             (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (g + 0.044715 * g * g * g))) * u;
    case Activation::kSwiGLUOai: {
      const double gc = std::min(g, 7.0), uc = std::clamp(u, -7.0, 7.0);
      return gc / (1.0 + std::exp(-1.702 * gc)) * (uc + 1.0);
    }
    case Activation::kSquaredReLU:
      break;
  }
  const double r = u > 0.0 ? u : 0.0;
  return r * r;
}

double dot_d(const std::vector<float>& w, const float* x) {
  double s = 0.0;
  for (size_t i = 0; i < w.size(); ++i) s += double(w[i]) * double(x[i]);
  return s;
}

std::vector<float> dense_moe_reference(const MoeExpertsView& ex, const float* x, const int32_t* ids,
                                       const float* scores, int top_k) {
  const int64_t din = ex.din(), dff = ex.dff();
  const bool has_gate = ex.act != Activation::kSquaredReLU;
  std::vector<double> out(size_t(din), 0.0);
  std::vector<float> act(static_cast<size_t>(dff));
  for (int k = 0; k < top_k; ++k) {
    for (int64_t f = 0; f < dff; ++f) {
      const double u = dot_d(dequant_row(ex.up, ids[k], f), x);
      const double g = has_gate ? dot_d(dequant_row(ex.gate, ids[k], f), x) : 0.0;
      act[size_t(f)] = float(activation_reference(ex.act, g, u));
    }
    for (int64_t h = 0; h < din; ++h)
      out[size_t(h)] += double(scores[k]) * dot_d(dequant_row(ex.down, ids[k], h), act.data());
  }
  return std::vector<float>(out.begin(), out.end());
}

double activation_error_bound(Activation act, double g, double u) {
  const double want = activation_reference(act, g, u);
  // z: the sigmoid's argument, rounded in f32 before exp (|z| ulp of sigmoid).
  const double z = act == Activation::kGeGLU
                       ? 2.0 * std::sqrt(2.0 / std::numbers::pi) * (g + 0.044715 * g * g * g)
                   : act == Activation::kSwiGLUOai ? 1.702 * std::min(g, 7.0)
                                                   : 0.0;
  return 1e-6 * (1.0 + 0.5 * std::fabs(z)) * (std::fabs(want) + 1e-6 * std::fabs(u));
}

std::vector<double> dense_moe_error_bound(const MoeExpertsView& ex, const float* x,
                                          const int32_t* ids, const float* scores, int top_k) {
  constexpr double kHalfUlp = 0x1p-24;  // f32 unit roundoff
  const Isa isa = active_isa();
  const int64_t din = ex.din(), dff = ex.dff();
  const bool has_gate = ex.act != Activation::kSquaredReLU;
  const QdotKernel& k_up = qdot_kernel(isa, ex.up);
  const QdotKernel& k_gate = qdot_kernel(isa, has_gate ? ex.gate : ex.up);
  const QdotKernel& k_down = qdot_kernel(isa, ex.down);
  std::vector<double> bound(size_t(din), 0.0), out(size_t(din), 0.0), sum_abs_p(size_t(din), 0.0);
  std::vector<float> act(static_cast<size_t>(dff));
  std::vector<double> err_a(static_cast<size_t>(dff));
  for (int k = 0; k < top_k; ++k) {
    const int64_t e = ids[k];
    for (int64_t f = 0; f < dff; ++f) {
      const double u = dot_d(dequant_row(ex.up, e, f), x);
      const double eu = qdot_error_bound(k_up, ex.up, e, f, x);
      const double g = has_gate ? dot_d(dequant_row(ex.gate, e, f), x) : 0.0;
      const double eg = has_gate ? qdot_error_bound(k_gate, ex.gate, e, f, x) : 0.0;
      const double a = activation_reference(ex.act, g, u);
      double moved = 0.0;
      for (double dg : {-eg, eg})
        for (double du : {-eu, eu})
          moved = std::fmax(moved, std::fabs(activation_reference(ex.act, g + dg, u + du) - a));
      act[size_t(f)] = float(a);
      err_a[size_t(f)] =
          2.0 * moved + activation_error_bound(ex.act, g, u) + kHalfUlp * std::fabs(a);
    }
    const double s = std::fabs(double(scores[k]));
    for (int64_t h = 0; h < din; ++h) {
      const std::vector<float> w = dequant_row(ex.down, e, h);
      double propagated = 0.0;
      for (int64_t f = 0; f < dff; ++f)
        propagated += std::fabs(double(w[size_t(f)])) * err_a[size_t(f)];
      const double y = dot_d(w, act.data());
      bound[size_t(h)] += s * (propagated + qdot_error_bound(k_down, ex.down, e, h, act.data()));
      sum_abs_p[size_t(h)] += s * std::fabs(y);
      out[size_t(h)] += double(scores[k]) * y;
    }
  }
  for (int64_t h = 0; h < din; ++h)
    bound[size_t(h)] +=
        double(top_k) * kHalfUlp * sum_abs_p[size_t(h)] + kHalfUlp * std::fabs(out[size_t(h)]);
  return bound;
}

BitDiff bit_diff(const float* a, const float* b, int64_t n) {
  BitDiff d;
  for (int64_t i = 0; i < n; ++i) {
    if (std::memcmp(a + i, b + i, sizeof(float)) == 0) continue;
    if (d.count++ == 0) d.first = i;
    d.max_abs = std::fmax(d.max_abs, std::fabs(double(a[i]) - double(b[i])));
  }
  return d;
}

std::string IsaLevel::name() const {
  return std::string(isa_name(isa)) + (isa == Isa::kAvx512 && !vbmi ? "_novbmi" : "");
}

void IsaLevel::set() const {
  set_active_isa(isa);
  set_avx512_vbmi_enabled(vbmi);
}

std::vector<IsaLevel> isa_levels() {
  const bool has_vbmi = detect_cpu_features().avx512vbmi;
  std::vector<IsaLevel> v;
  for (Isa isa : supported_isas()) {
    v.push_back({isa, has_vbmi});
    if (isa == Isa::kAvx512 && has_vbmi) v.push_back({isa, false});
  }
  return v;
}

void fallback_moe(const MoeExpertsView& ex, const float* x, const int32_t* ids, const float* scores,
                  int top_k, FallbackBuffers& buf, float* out) {
  const int64_t din = ex.din(), dff = ex.dff();
  const bool has_gate = ex.act != Activation::kSquaredReLU;
  buf.g.resize(size_t(top_k * dff));
  buf.u.resize(size_t(top_k * dff));
  buf.a.resize(size_t(top_k * dff));
  buf.y.resize(size_t(top_k * din));
  buf.zeros.assign(size_t(top_k), 0);
  GatherQmmArgs q;
  q.x = x;
  q.x_rows = 1;
  q.lhs_indices = buf.zeros.data();
  q.rhs_indices = ids;
  q.batch = top_k;
  if (has_gate) {
    q.w = &ex.gate;
    q.out = buf.g.data();
    gather_qmm(q);
  }
  q.w = &ex.up;
  q.out = buf.u.data();
  gather_qmm(q);
  apply_activation({ex.act, buf.g.data(), buf.u.data(), top_k, dff, buf.a.data()});
  q.x = buf.a.data();
  q.x_rows = top_k;
  q.lhs_indices = nullptr;
  q.w = &ex.down;
  q.out = buf.y.data();
  gather_qmm(q);
  weighted_sum({buf.y.data(), scores, 1, top_k, din, out});
}

double nrms(const float* a, const float* b, int64_t n) {
  double num = 0.0, den = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    num += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    den += double(b[i]) * b[i];
  }
  return den > 0.0 ? std::sqrt(num / den) : std::sqrt(num);
}

}  // namespace moex::kernels::testing
