// CudaMoeBackend: one device copy of each layer's experts, host activations copied per token.
// (The whole decode step on the device, with activations that stay there, is the CUDA
// engine's work; until then this is what `--backend cuda` runs for the MoE layers.)
#include "moe/cuda/cuda_moe_backend.h"

#include <algorithm>
#include <memory>

#include "core/error.h"
#include "backend/cuda/device.h"
#include "backend/cuda/device_moe_layer.h"
#include "backend/cuda/moe_decode.h"

namespace moex::moe {
namespace {

using kernels::MoeExpertsView;

// The device kernels hold up to this many selected experts per token.
constexpr int kMaxTopK = 64;

class DeviceExperts final : public PreparedExperts {
 public:
  DeviceExperts(const MoeExpertsView& host, const char* what)
      : PreparedExperts(host), layer_(upload(host, what)),
        top_k_(int(std::min<int64_t>(host.up.experts, kMaxTopK))),
        ws_(layer_, top_k_),
        x_(size_t(host.din()) * sizeof(float)),
        out_(size_t(host.din()) * sizeof(float)),
        ids_(size_t(top_k_) * sizeof(int32_t)),
        scores_(size_t(top_k_) * sizeof(float)) {}

  // One token on the device: copy in, run, copy back (DeviceBuffer copies are synchronous).
  template <typename Path>
  void run_token(Path path, const float* x, const int32_t* ids, const float* scores, int top_k,
                 float* out) const {
    if (top_k > top_k_)
      fail("backend cuda: top_k ", top_k, " exceeds the ", top_k_, " the device workspace holds");
    x_.upload(x, x_.bytes());
    ids_.upload(ids, size_t(top_k) * sizeof(int32_t));
    scores_.upload(scores, size_t(top_k) * sizeof(float));
    cuda::DecodeArgs a;
    a.x = x_.as<float>();
    a.expert_ids = ids_.as<int32_t>();
    a.scores = scores_.as<float>();
    a.top_k = top_k;
    a.out = out_.as<float>();
    path(layer_, a, ws_);
    out_.download(out, out_.bytes());
  }

 private:
  static cuda::DeviceMoeLayer upload(const MoeExpertsView& v, const char* what) {
    if (v.gate_bias || v.up_bias || v.down_bias)
      fail("backend cuda: ", what, " have expert biases (mlp_bias), which the CUDA kernels do "
           "not apply yet; use --backend cpu");
    return cuda::DeviceMoeLayer::upload(v);
  }

  cuda::DeviceMoeLayer layer_;
  int top_k_;
  mutable cuda::DecodeWorkspace ws_;
  mutable cuda::DeviceBuffer x_, out_, ids_, scores_;
};

class CudaMoeBackend final : public MoeBackend {
 public:
  Backend kind() const override { return Backend::kCuda; }
  // As `moex tune --backend cuda` writes it.
  CalibrationKey calibration_key() const override {
    const cuda::DeviceInfo d = cuda::device_info();
    return {backend_name(Backend::kCuda), d.name, 1, str_cat("sm_", d.cc_major, d.cc_minor), "f32"};
  }

  std::unique_ptr<PreparedExperts> prepare(const MoeExpertsView& experts,
                                           const char* what) const override {
    return std::make_unique<DeviceExperts>(experts, what);
  }

  std::optional<int64_t> device_free_bytes() const override { return cuda::device_free_bytes(); }

  // The CUDA fused kernels run every format DeviceMoeLayer::upload accepts.
  bool has_fused_kernel(const PreparedExperts& /*experts*/) const override { return true; }

  void fused(const PreparedExperts& p, const RoutedCall& c, MoeWorkspace& ws) const override {
    run(p, c, ws, [](const cuda::DeviceMoeLayer& l, const cuda::DecodeArgs& a,
                     cuda::DecodeWorkspace& w) { cuda::fused_decode(l, a, w); });
  }
  // The device fallback composes gather_qmm launches for one token; prefill runs it per token.
  void fallback(const PreparedExperts& p, const RoutedCall& c, MoeWorkspace& ws) const override {
    run(p, c, ws, [](const cuda::DeviceMoeLayer& l, const cuda::DecodeArgs& a,
                     cuda::DecodeWorkspace& w) { cuda::fallback_decode(l, a, w); });
  }

 private:
  template <typename Path>
  static void run(const PreparedExperts& p, const RoutedCall& c, MoeWorkspace& /*ws*/, Path path) {
    const auto* d = dynamic_cast<const DeviceExperts*>(&p);
    if (!d) fail("backend cuda: experts prepared by another backend");
    const int64_t din = p.host().din();
    for (int64_t t = 0; t < c.tokens; ++t)
      d->run_token(path, c.x + t * din, c.expert_ids + t * c.top_k, c.scores + t * c.top_k,
                   c.top_k, c.out + t * din);
  }
};

}  // namespace

const MoeBackend& cuda_moe_backend() {
  static const CudaMoeBackend backend;
  return backend;
}

}  // namespace moex::moe
