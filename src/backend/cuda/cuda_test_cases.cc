// The GPU tests' case table and helpers (cuda_test_cases.h).
#include "backend/cuda/cuda_test_cases.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.h"
#include "backend/cuda/cuda_check.h"

namespace moex::cuda::testing {
namespace {

const char* act_tag(kernels::Activation a) {
  switch (a) {
    case kernels::Activation::kSwiGLU: return "swiglu";
    case kernels::Activation::kGeGLU: return "geglu";
    case kernels::Activation::kSquaredReLU: return "relu2";
    case kernels::Activation::kSwiGLUOai: return "swiglu_oai";
  }
  return "act";
}

constexpr uint32_t kCanaryBits = 0x7fc0beefu;  // a NaN payload no kernel writes
constexpr uint32_t kPoisonBits = 0xffffffffu;  // NaN

}  // namespace

std::string DecodeCase::name() const {
  bool dup = false;
  for (size_t i = 0; i < ids.size(); ++i)
    for (size_t j = 0; j < i; ++j) dup |= ids[i] == ids[j];
  return str_cat("gu", gate_up_bits, "_d", down_bits, "_g", group_size, "_",
                 sb == DType::BF16 ? "bf16" : sb == DType::F16 ? "f16" : "f32", "_",
                 act_tag(act), "_din", din, "_dff", dff, "_k", ids.size(), dup ? "dup" : "");
}

std::vector<DecodeCase> decode_cases() {
  const std::vector<int32_t> k1 = {5};
  const std::vector<int32_t> k8 = {3, 7, 3, 0, 6, 1, 7, 2};  // duplicates 3 and 7
  std::vector<DecodeCase> cases;
  const kernels::Activation acts[] = {kernels::Activation::kSwiGLU,
                                      kernels::Activation::kGeGLU,
                                      kernels::Activation::kSquaredReLU};
  for (int bits : {2, 3, 4, 5, 6, 8})
    for (int g : {32, 64, 128})
      for (kernels::Activation act : acts) {
        DecodeCase c;
        c.gate_up_bits = c.down_bits = bits;
        c.group_size = g;
        c.act = act;
        c.din = 512;
        c.dff = 3 * g;  // 3, 6 or 12 units of 32: most lanes idle in stage B
        c.ids = (bits + g / 32) % 2 ? k1 : k8;
        cases.push_back(c);
        if (act == kernels::Activation::kSwiGLU) {  // the other K as well
          c.ids = (bits + g / 32) % 2 ? k8 : k1;
          cases.push_back(c);
        }
      }
  // Mixed widths per projection, other scale dtypes.
  const int mixed[][2] = {{4, 6}, {8, 4}, {3, 5}, {2, 8}, {6, 2}, {5, 3}};
  for (const auto& m : mixed) {
    DecodeCase c;
    c.gate_up_bits = m[0];
    c.down_bits = m[1];
    c.ids = k8;
    cases.push_back(c);
  }
  for (DType sb : {DType::F16, DType::F32})
    for (int bits : {3, 4, 8}) {
      DecodeCase c;
      c.gate_up_bits = c.down_bits = bits;
      c.sb = sb;
      c.act = kernels::Activation::kGeGLU;
      c.ids = k8;
      cases.push_back(c);
    }
  // Larger rows: Din 2560 (80 units: a second pass of the warp with a partial tail), Dff 1408.
  for (int bits : {4, 6, 8}) {
    DecodeCase c;
    c.gate_up_bits = c.down_bits = bits;
    c.din = 2560;
    c.dff = 1408;
    c.ids = k8;
    cases.push_back(c);
  }
  DecodeCase wide;  // Dff > Din: stage B rows longer than stage A rows
  wide.din = 256;
  wide.dff = 4096;
  wide.group_size = 128;
  wide.act = kernels::Activation::kSquaredReLU;
  wide.ids = k8;
  cases.push_back(wide);
  DecodeCase long_act;  // Dff 12288: the staged act needs 54 KB, past the 48 KB default
  long_act.din = 128;
  long_act.dff = 12288;
  long_act.ids = {1, 4};
  cases.push_back(long_act);
  return cases;
}

GuardedOutput::GuardedOutput(int64_t n) : n_(n), buf_(size_t(n + kCanary) * 4) { poison(); }

void GuardedOutput::poison() {
  std::vector<uint32_t> v(size_t(n_ + kCanary), kPoisonBits);
  for (int64_t i = n_; i < n_ + kCanary; ++i) v[size_t(i)] = kCanaryBits;
  buf_.upload(v.data(), v.size() * 4);
}

std::vector<float> GuardedOutput::values() const { return to_host<float>(buf_, size_t(n_)); }

bool GuardedOutput::canaries_intact() const {
  std::vector<uint32_t> v = to_host<uint32_t>(buf_, size_t(n_ + kCanary));
  for (int64_t i = n_; i < n_ + kCanary; ++i)
    if (v[size_t(i)] != kCanaryBits) return false;
  return true;
}

double nrms(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i])) return std::numeric_limits<double>::infinity();
    const double d = double(a[i]) - double(b[i]);
    num += d * d;
    den += double(b[i]) * double(b[i]);
  }
  return den > 0 ? std::sqrt(num / den) : std::sqrt(num);
}

int64_t count_non_finite(const std::vector<float>& v) {
  int64_t n = 0;
  for (float f : v) n += !std::isfinite(f);
  return n;
}

std::vector<float> download(const float* device_ptr, int64_t n) {
  std::vector<float> v(static_cast<size_t>(n));
  check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize (test download)", __FILE__,
             __LINE__);
  if (n > 0)
    check_cuda(cudaMemcpy(v.data(), device_ptr, size_t(n) * 4, cudaMemcpyDeviceToHost),
               "cudaMemcpy (test download)", __FILE__, __LINE__);
  return v;
}

std::vector<float> test_scores(int top_k) {
  std::vector<float> s(static_cast<size_t>(top_k));
  float sum = 0;
  for (int k = 0; k < top_k; ++k) sum += (s[size_t(k)] = 1.f + 0.37f * float(k));
  for (float& v : s) v /= sum;
  return s;
}

}  // namespace moex::cuda::testing
