// The backend conformance harness (llama.cpp test-backend-ops's shape): every case of the
// table (conformance_*_test.cc) runs on the CPU backend at the scalar ISA on one thread (the
// reference) and then on every target: the CPU backend at each instruction set this CPU has
// (scalar again at the default thread count, AVX2, AVX-512 with and without VBMI) and every
// other built backend. Each output is guarded by canaries and NaN poison, must be finite and
// must lie within the case's bound of the reference (bit equality where the code is shared).
// MOEX_CONFORMANCE_FILTER=substring runs only the cases whose id contains it.
// CUDA (built with nvcc and a device present): every case also runs on the CUDA ModelBackend,
// its inputs and outputs staged through alloc/upload/download (Stage), within the case's bound
// at AVX2 (any summation order, with or without FMA) plus the reference's, widened by 4 ulp of
// each output for CUDA's expf/tanhf/sincosf (within 2 ulp of the C library's); otherwise its
// rows are reported skipped with the reason.
#include "backend/conformance.h"
#include "backend/foreign_backend_test_util.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

#include "core/error.h"
#include "core/parallel.h"
#include "kernels/kernels_test_util.h"
#ifdef MOEX_HAVE_CUDA
#include "backend/cuda/cuda_model_backend.h"
#include "backend/cuda/device.h"
#endif

namespace moex::backend::conformance {
namespace {

using kernels::testing::IsaLevel;

// n floats between two runs of canaries, NaN-poisoned (a value left unwritten is not finite).
// Floats throughout; bit patterns go in and out by memcpy.
class Guarded {
 public:
  explicit Guarded(int64_t n) : n_(n), v_(size_t(n + 2 * kCanary), as_float(kPoison)) {
    for (int64_t i = 0; i < kCanary; ++i)
      v_[size_t(i)] = v_[size_t(n + kCanary + i)] = as_float(kCanaryBits);
  }
  float* data() { return v_.data() + kCanary; }
  bool canaries_intact() const {
    for (int64_t i = 0; i < kCanary; ++i)
      if (bits(v_[size_t(i)]) != kCanaryBits || bits(v_[size_t(n_ + kCanary + i)]) != kCanaryBits)
        return false;
    return true;
  }
  void append_to(std::vector<float>& out) const {
    out.insert(out.end(), v_.begin() + kCanary, v_.begin() + kCanary + n_);
  }
  // The whole buffer, canaries included (what a device copy of it holds).
  float* guarded() { return v_.data(); }
  int64_t guarded_floats() const { return int64_t(v_.size()); }
  static constexpr int64_t kCanary = 16;

 private:
  static constexpr uint32_t kCanaryBits = 0x7fc0beefu;  // a NaN payload no op writes
  static constexpr uint32_t kPoison = 0xffffffffu;      // NaN
  static float as_float(uint32_t b) {
    float f;
    std::memcpy(&f, &b, 4);
    return f;
  }
  static uint32_t bits(float f) {
    uint32_t b;
    std::memcpy(&b, &f, 4);
    return b;
  }
  int64_t n_;
  std::vector<float> v_;
};

struct Outputs {
  std::vector<float> out;  // the parts concatenated
  bool canaries = true;
};

Outputs run_case(const Case& c, const ModelBackend& b) {
  std::vector<Guarded> guards;
  std::vector<float*> ptrs;
  guards.reserve(c.parts.size());
  for (int64_t n : c.parts) guards.emplace_back(n);
  Stage stage(b);
  if (b.memory() == Memory::kHost || c.host_memory) {
    for (Guarded& g : guards) ptrs.push_back(g.data());
    c.run(b, stage, ptrs.data());
  } else {  // each guarded part, canaries and poison included, goes to the device and back
    std::vector<Buffer> dev;
    for (size_t i = 0; i < guards.size(); ++i) {
      const int64_t bytes = guards[i].guarded_floats() * int64_t(sizeof(float));
      dev.push_back(b.alloc(bytes));
      b.upload(dev.back().data(), guards[i].guarded(), bytes);
      ptrs.push_back(dev.back().as<float>() + Guarded::kCanary);
    }
    c.run(b, stage, ptrs.data());
    for (size_t i = 0; i < guards.size(); ++i)
      b.download(guards[i].guarded(), dev[i].data(),
                 guards[i].guarded_floats() * int64_t(sizeof(float)));
  }
  Outputs r;
  for (const Guarded& g : guards) {
    r.canaries = r.canaries && g.canaries_intact();
    g.append_to(r.out);
  }
  return r;
}

// The verdict on one target's outputs against the reference's.
struct Verdict {
  std::string failure;   // "" when it conforms
  double max_err = 0;    // largest |got - ref|
  double max_ratio = 0;  // largest |got - ref| / tol where tol > 0
  bool bit_equal = true;
};

Verdict compare(const std::vector<float>& ref, const Outputs& got, const std::vector<double>& tol) {
  Verdict v;
  char buf[200];
  if (!got.canaries) v.failure = "a canary around an output was overwritten";
  if (got.out.size() != ref.size() || tol.size() != ref.size()) {
    std::snprintf(buf, sizeof buf, "sizes differ: %zu outputs, %zu reference, %zu bounds",
                  got.out.size(), ref.size(), tol.size());
    v.failure = buf;
    return v;
  }
  for (size_t i = 0; i < ref.size(); ++i) {
    if (!std::isfinite(got.out[i]) || !std::isfinite(ref[i])) {
      std::snprintf(buf, sizeof buf, "output %zu is not finite (got %g, reference %g)", i,
                    double(got.out[i]), double(ref[i]));
      if (v.failure.empty()) v.failure = buf;
      v.bit_equal = false;
      continue;
    }
    const double err = std::fabs(double(got.out[i]) - double(ref[i]));
    const bool same_bits = std::memcmp(&got.out[i], &ref[i], 4) == 0;
    v.bit_equal = v.bit_equal && same_bits;
    v.max_err = std::max(v.max_err, err);
    if (tol[i] > 0) v.max_ratio = std::max(v.max_ratio, err / tol[i]);
    const bool ok = tol[i] > 0 ? err <= tol[i] : same_bits;
    if (!ok && v.failure.empty()) {
      std::snprintf(buf, sizeof buf,
                    "output %zu: got %.9g, reference %.9g, |diff| %.3g > bound %.3g%s", i,
                    double(got.out[i]), double(ref[i]), err, tol[i],
                    tol[i] > 0 ? "" : " (bit equality required)");
      v.failure = buf;
    }
  }
  return v;
}

// MOEX_CONFORMANCE_FILTER: unset or empty runs every case; otherwise a substring of case ids
// (printable ASCII, at most 200 characters; anything else is an error naming the variable).
std::string conformance_filter() {
  const char* env = std::getenv("MOEX_CONFORMANCE_FILTER");
  if (!env) return "";
  const std::string f = env;
  if (f.size() > 200) fail("MOEX_CONFORMANCE_FILTER: longer than 200 characters");
  for (unsigned char ch : f)
    if (ch < 0x20 || ch > 0x7e)
      fail("MOEX_CONFORMANCE_FILTER: not printable ASCII (a substring of a case id expected)");
  return f;
}

std::vector<Case> all_cases() {
  std::vector<Case> cases;
  add_linear_cases(cases);
  add_attention_cases(cases);
  add_elementwise_cases(cases);
  add_mixer_cases(cases);
  add_moe_cases(cases);
  return cases;
}

// The CUDA backend when its rows can run, else nullptr and why not.
const ModelBackend* cuda_target(std::string* why) {
#ifdef MOEX_HAVE_CUDA
  if (cuda::device_available()) return &cuda_backend();
  *why = "no CUDA device: " + cuda::device_unavailable_reason();
#else
  *why = "moex was built without CUDA (no nvcc)";
#endif
  return nullptr;
}

std::string cuda_skip_reason() {
  std::string why;
  return cuda_target(&why) ? "" : why;
}

std::string op_of(const std::string& id) { return id.substr(0, id.find('/')); }

TEST(BackendConformance, CaseIdsAreUniqueAndEveryCaseIsWellFormed) {
  const std::vector<Case> cases = all_cases();
  std::map<std::string, int> seen;
  for (const Case& c : cases) {
    EXPECT_EQ(seen[c.id]++, 0) << "duplicate case id " << c.id;
    EXPECT_TRUE(c.run && c.bound && !c.parts.empty()) << c.id;
    EXPECT_EQ(std::count(c.id.begin(), c.id.end(), '/'), 2) << c.id << ": op/format/shape";
  }
}

// The checks themselves can fail: an overwritten canary, a NaN, an error past the bound and a
// one-ulp difference where bit equality is required are each reported.
TEST(BackendConformance, CompareCatchesEachKindOfFault) {
  const std::vector<float> ref = {1.f, -2.f, 3.f};
  Outputs ok{ref, true};
  EXPECT_EQ(compare(ref, ok, {0, 0, 0}).failure, "");
  Outputs canary = ok;
  canary.canaries = false;
  EXPECT_NE(compare(ref, canary, {0, 0, 0}).failure, "");
  Outputs nan = ok;
  nan.out[1] = std::nanf("");
  EXPECT_NE(compare(ref, nan, {1, 1, 1}).failure, "");
  Outputs off = ok;
  off.out[2] = std::nextafter(3.f, 4.f);
  EXPECT_NE(compare(ref, off, {0, 0, 0}).failure, "");
  EXPECT_EQ(compare(ref, off, {0, 0, 1e-6}).failure, "");
  EXPECT_NE(compare(ref, off, {0, 0, 1e-7}).failure, "");
  // A run that writes past its part trips the canary.
  Case c;
  c.parts = {4};
  c.run = [](const ModelBackend&, Stage&, float* const* outs) {
    for (int i = 0; i <= 4; ++i) outs[0][i] = 0.f;
  };
  EXPECT_FALSE(run_case(c, cpu_backend()).canaries);
}

// The staging a device target needs, checked without a device: every case on a backend whose
// memory the case cannot touch (each op checks that its pointers are staged allocations) gives
// the CPU backend's bits at the same ISA, its canaries intact after the round trip.
TEST(BackendConformance, EveryCaseStagesItsInputsAndOutputsForAForeignMemoryBackend) {
  const std::string filter = conformance_filter();
  kernels::testing::IsaGuard guard;
  const ForeignMemoryBackend foreign;
  int ran = 0;
  for (const Case& c : all_cases()) {
    if (!filter.empty() && c.id.find(filter) == std::string::npos) continue;
    ++ran;
    const Outputs want = run_case(c, cpu_backend());
    Outputs got;
    try {
      got = run_case(c, foreign);
    } catch (const Error& e) {
      ADD_FAILURE() << c.id << ": " << e.what();
      continue;
    }
    const Verdict v = compare(want.out, got, std::vector<double>(want.out.size(), 0.0));
    EXPECT_EQ(v.failure, "") << c.id << " through staged memory";
  }
  EXPECT_GT(ran, 0);
  // And the check itself bites: an op handed a host vector is refused.
  std::vector<float> host(8, 1.f);
  EXPECT_THROW(foreign.scale(host.data(), 8, 2.f), Error);
}

TEST(BackendConformance, EveryCaseOnEveryTargetMatchesTheScalarReference) {
  const std::string filter = conformance_filter();
  kernels::testing::IsaGuard guard;
  const int threads = num_threads();
  const ModelBackend& cpu = cpu_backend();
  const std::vector<IsaLevel> levels = kernels::testing::isa_levels();
  std::string cuda_reason;
  const ModelBackend* cuda = cuda_target(&cuda_reason);
  struct OpStat {
    double max_err = 0, max_ratio = 0;
    int cases = 0;
    bool bit_equal = true;
  };
  std::map<std::string, std::map<std::string, OpStat>> stats;  // op -> target -> stat
  int ran = 0, skipped_cuda = 0;
  const auto t0 = std::chrono::steady_clock::now();
  std::printf("reference: cpu/scalar on 1 thread; targets:");
  for (const IsaLevel& l : levels) std::printf(" cpu/%s (%d threads)", l.name().c_str(), threads);
  if (cuda)
    std::printf("; cuda\n");
  else
    std::printf("; cuda: skipped: %s\n", cuda_reason.c_str());
  for (const Case& c : all_cases()) {
    if (!filter.empty() && c.id.find(filter) == std::string::npos) continue;
    ++ran;
    IsaLevel{Isa::kScalar, avx512_vbmi_active()}.set();
    set_num_threads(1);
    const Outputs ref = run_case(c, cpu);
    ASSERT_TRUE(ref.canaries) << c.id << ": the reference wrote past an output";
    if (c.invariant) {
      EXPECT_EQ(c.invariant(ref.out), "") << c.id << " at the reference";
    }
    const std::vector<double> ref_bound = c.bound(Isa::kScalar);
    set_num_threads(threads);
    std::string line = c.id;
    for (const IsaLevel& l : levels) {
      l.set();
      std::vector<double> tol = c.bound(l.isa);
      if (l.isa == Isa::kScalar) {
        std::fill(tol.begin(), tol.end(), 0.0);
      } else {
        for (size_t i = 0; i < tol.size() && i < ref_bound.size(); ++i) tol[i] += ref_bound[i];
      }
      const Outputs got = run_case(c, cpu);
      const Verdict v = compare(ref.out, got, tol);
      EXPECT_EQ(v.failure, "") << c.id << " on cpu/" << l.name() << " (rule: " << c.rule << ")";
      if (c.invariant) {
        EXPECT_EQ(c.invariant(got.out), "") << c.id << " on cpu/" << l.name();
      }
      OpStat& s = stats[op_of(c.id)][l.name()];
      s.max_err = std::max(s.max_err, v.max_err);
      s.max_ratio = std::max(s.max_ratio, v.max_ratio);
      s.bit_equal = s.bit_equal && v.bit_equal;
      ++s.cases;
      char buf[160];
      if (v.bit_equal) {
        std::snprintf(buf, sizeof buf, "  %s: bit-equal", l.name().c_str());
      } else {
        std::snprintf(buf, sizeof buf, "  %s: max|d| %.2e (%.2g of bound)", l.name().c_str(),
                      v.max_err, v.max_ratio);
      }
      line += buf;
    }
    if (!cuda) {
      ++skipped_cuda;
      std::printf("%s  cuda: skipped\n", line.c_str());
      continue;
    }
    IsaLevel{Isa::kAvx2, false}.set();
    std::vector<double> tol = c.bound(Isa::kAvx2);
    for (size_t i = 0; i < tol.size() && i < ref_bound.size() && i < ref.out.size(); ++i)
      tol[i] += ref_bound[i] + 4 * 0x1p-23 * std::fabs(double(ref.out[i]));
    const Outputs got = run_case(c, *cuda);
    const Verdict v = compare(ref.out, got, tol);
    EXPECT_EQ(v.failure, "") << c.id << " on cuda (rule: " << c.rule << ", at AVX2, + 4 ulp)";
    if (c.invariant) {
      EXPECT_EQ(c.invariant(got.out), "") << c.id << " on cuda";
    }
    OpStat& s = stats[op_of(c.id)]["cuda"];
    s.max_err = std::max(s.max_err, v.max_err);
    s.max_ratio = std::max(s.max_ratio, v.max_ratio);
    s.bit_equal = s.bit_equal && v.bit_equal;
    ++s.cases;
    std::printf("%s  cuda: max|d| %.2e (%.2g of bound)\n", line.c_str(), v.max_err,
                v.max_ratio);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!filter.empty() && ran == 0)
    ADD_FAILURE() << "MOEX_CONFORMANCE_FILTER=\"" << filter << "\" matches no case id";
  std::printf("\n%-18s %-14s %6s %12s %12s\n", "op", "target", "cases", "max |diff|", "of bound");
  for (const auto& [op, per_target] : stats)
    for (const auto& [target, s] : per_target)
      std::printf("%-18s %-14s %6d %12.3g %12s\n", op.c_str(), target.c_str(), s.cases, s.max_err,
                  s.bit_equal ? "bit-equal" : std::to_string(s.max_ratio).c_str());
  std::printf("%d cases in %.2f s; cuda: %d rows skipped (%s)\n", ran, secs, skipped_cuda,
              cuda_reason.c_str());
}

// An F16 KV cache lives in host memory only: a backend of other memory refuses it by name
// and says what runs it, and still makes f32 ones.
TEST(BackendConformance, F16KvCacheIsHostMemoryOnly) {
  const ForeignMemoryBackend foreign;
  try {
    (void)foreign.new_kv_cache(2, 8, 4, true, DType::F16);
    ADD_FAILURE() << "no moex::Error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("foreign-memory-check backend"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("--kv-cache f16 runs on the CPU"), std::string::npos);
  }
  EXPECT_EQ(foreign.new_kv_cache(2, 8, 4).bytes(), 2 * 2 * 8 * 4 * 4);
  EXPECT_EQ(cpu_backend().new_kv_cache(2, 8, 4, true, DType::F16).bytes(), 2 * 2 * 8 * 4 * 2);
}

// The CUDA rows, reported as skipped with the reason (label unit: no device needed).
TEST(BackendConformance, CudaRows) {
  const std::string why = cuda_skip_reason();
  if (!why.empty()) GTEST_SKIP() << "skipped: " << why;
  SUCCEED() << "the CUDA rows ran in EveryCaseOnEveryTargetMatchesTheScalarReference";
}

}  // namespace
}  // namespace moex::backend::conformance
