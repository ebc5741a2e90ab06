// The CUDA backend: every pointer an op takes is device memory (alloc, upload, download move
// bytes in and out); the weights the contract names by their host view (a Linear, an embedding
// table, a multi-linear stack, a Rope) are uploaded on first use and kept, keyed by the host
// bytes they view, so a model's weights cross the bus once. Every op of the contract has a
// device implementation here; the fp weight modes (mxfp4 and kin) are refused by the upload,
// naming the tensor.
#include "backend/cuda/cuda_model_backend.h"

#include <cuda_runtime_api.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "backend/cuda/cuda_check.h"
#include "backend/cuda/device.h"
#include "backend/cuda/ops/device_ops.h"
#include "backend/cuda/ops/mixer_ops.h"
#include "core/error.h"

namespace moex::backend {
namespace {

namespace dev = ::moex::cuda::ops;

// A linear layer's weights and bias on the device.
struct DeviceLinear {
  dev::DeviceMatrix w;
  cuda::DeviceBuffer bias;  // empty when the layer has none
};

using WeightKey = std::tuple<const void*, int64_t, int64_t, int64_t>;  // bytes, groups, n, k

class CudaModelBackend final : public ModelBackend {
 public:
  const char* name() const override { return "cuda"; }
  Memory memory() const override { return Memory::kCuda; }
  bool supports_op(Op op) const override { return op != Op::kCount; }

  Buffer alloc(int64_t bytes) const override { return cuda::device_buffer(bytes); }
  void upload(void* dst, const void* host_src, int64_t bytes) const override {
    if (bytes > 0)
      MOEX_CUDA_CHECK(cudaMemcpy(dst, host_src, size_t(bytes), cudaMemcpyHostToDevice));
  }
  void download(void* host_dst, const void* src, int64_t bytes) const override {
    if (bytes > 0)
      MOEX_CUDA_CHECK(cudaMemcpy(host_dst, src, size_t(bytes), cudaMemcpyDeviceToHost));
  }
  void zero(void* dst, int64_t bytes) const override {
    if (bytes > 0) MOEX_CUDA_CHECK(cudaMemset(dst, 0, size_t(bytes)));
  }

  void linear(const ops::LinearArgs& a) const override {
    if (!a.lin) fail("cuda linear: no layer");
    const DeviceLinear& d = device_linear(*a.lin);
    dev::linear({.w = &d.w.view(), .bias = d.bias.as<const float>(), .x = a.x, .rows = a.rows,
                 .out = a.out});
  }
  void linear_same_input(const ops::Linear* const* lins, float* const* outs, int count,
                         const float* x, int64_t rows) const override {
    std::vector<dev::LinearArgs> parts;
    for (int i = 0; i < count; ++i) {
      const DeviceLinear& d = device_linear(*lins[i]);
      parts.push_back({.w = &d.w.view(), .bias = d.bias.as<const float>(), .x = x, .rows = rows,
                       .out = outs[i]});
    }
    dev::linear_same_input(parts.data(), count);
  }
  void rms_norm(const ops::RmsNormArgs& a) const override { dev::rms_norm(a); }
  void layer_norm(const ops::LayerNormArgs& a) const override { dev::layer_norm(a); }
  void rope(const ops::Rope& rope, float* x, int64_t rows, int64_t heads, int64_t head_dim,
            int64_t pos0) const override {
    if (rope.spec().kind == ops::RopeKind::kDynamic && pos0 + rows > rope.spec().max_position)
      fail("cuda rope: dynamic NTK past max_position (", rope.spec().max_position,
           ") has no device table");
    dev::rope({.rope = &device_rope(rope), .x = x, .rows = rows, .heads = heads,
               .head_dim = head_dim, .pos0 = pos0});
  }
  void kv_append(ops::KvCache& cache, const float* k, const float* v,
                 int64_t rows) const override {
    dev::kv_append(cache, k, v, rows);
  }
  void attention(const ops::AttentionArgs& a) const override {
    dev::attention(a, scratch(dev::attention_scratch_floats(a.rows, a.heads, a.pos0)));
  }
  void embedding_rows(const ops::MatrixRef& table, const int32_t* tokens, int64_t n,
                      float* out) const override {
    dev::embedding_rows(device_matrix(table.q, "embedding table").view(), tokens, n, out);
  }
  void swiglu(const float* gate, const float* up, float* out, int64_t n) const override {
    dev::gated_activation(kernels::Activation::kSwiGLU, gate, up, out, n);
  }
  void gated_activation(kernels::Activation act, const float* gate, const float* up, float* out,
                        int64_t n) const override {
    dev::gated_activation(act, gate, up, out, n);
  }
  void gated_delta(const ops::GatedDeltaArgs& a) const override { dev::gated_delta(a); }
  void ssm_scan(const ops::SsmScanArgs& a) const override { dev::ssm_scan(a); }
  void causal_conv_silu(const ops::CausalConvArgs& a) const override {
    dev::causal_conv_silu(a);
  }
  void gated_rms_norm(const ops::GatedRmsNormArgs& a) const override { dev::gated_rms_norm(a); }
  void short_conv(const ops::ShortConvArgs& a) const override { dev::short_conv(a); }
  void multi_linear(const ops::MultiLinearArgs& a) const override {
    if (!a.w) fail("cuda multi_linear: no weights");
    dev::multi_linear({.w = &device_stack(*a.w).view(), .x = a.x, .rows = a.rows, .out = a.out});
  }
  void mla_attention(const ops::MlaAttentionArgs& a) const override {
    dev::mla_attention(a, scratch(dev::attention_scratch_floats(a.rows, a.heads, a.pos0)));
  }
  void add_scaled(float* x, const float* y, int64_t n, float scale) const override {
    dev::add_scaled(x, y, n, scale);
  }
  void scale(float* x, int64_t n, float s) const override { dev::scale_in_place(x, n, s); }
  void sigmoid_gate(float* x, const float* gate, int64_t n) const override {
    dev::sigmoid_gate(x, gate, n);
  }
  void divide_and_softcap(float* x, int64_t n, float divisor, float cap) const override {
    dev::divide_and_softcap(x, n, divisor, cap);
  }
  void query_temperature(const ops::QueryTemperatureArgs& a) const override {
    dev::query_temperature(a);
  }
  void split_halves(const float* src, float* first, float* second, int64_t rows,
                    int64_t half) const override {
    dev::split_halves(src, first, second, rows, half);
  }
  void copy_columns(const ops::CopyColumnsArgs& a) const override { dev::copy_columns(a); }
  void dt_softplus(const ops::DtSoftplusArgs& a) const override { dev::dt_softplus(a); }
  void delta_gates(const ops::DeltaGatesArgs& a) const override { dev::delta_gates(a); }
  void copy(float* dst, const float* src, int64_t n) const override {
    if (n > 0)
      MOEX_CUDA_CHECK(cudaMemcpy(dst, src, size_t(n) * sizeof(float), cudaMemcpyDeviceToDevice));
  }

 private:
  // The device copy kept under `key` in `map`, made by make() on first use (a throw keeps
  // nothing).
  template <class Map, class Make>
  const auto& kept(Map& map, const typename Map::key_type& key, Make make) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = map.find(key);
    if (it == map.end()) it = map.emplace(key, make()).first;
    return *it->second;
  }
  const DeviceLinear& device_linear(const ops::Linear& l) const {
    return kept(linears_, WeightKey{l.w.q.w, 1, l.w.n(), l.w.k()}, [&] {
      auto d = std::make_unique<DeviceLinear>();
      d->w = dev::DeviceMatrix::upload(l.w.q, l.name);
      if (l.bias.size() > 0) {
        if (l.bias.size() != l.w.n())
          fail("cuda linear '", l.name, "': a bias of ", l.bias.size(), " values for ", l.w.n(),
               " rows");
        d->bias = cuda::DeviceBuffer(size_t(l.bias.size()) * sizeof(float));
        d->bias.upload(l.bias.data(), size_t(l.bias.size()) * sizeof(float));
      }
      return d;
    });
  }
  const dev::DeviceMatrix& device_matrix(const quant::QuantMatrixView& m,
                                         const char* what) const {
    return kept(matrices_, WeightKey{m.w, 1, m.rows, m.k}, [&] {
      return std::make_unique<dev::DeviceMatrix>(dev::DeviceMatrix::upload(m, what));
    });
  }
  const dev::DeviceMatrix& device_stack(const kernels::QuantWeightsView& v) const {
    return kept(matrices_, WeightKey{v.w, v.experts, v.n, v.k}, [&] {
      return std::make_unique<dev::DeviceMatrix>(
          dev::DeviceMatrix::upload_stack(v, "multi-linear stack"));
    });
  }
  const dev::DeviceRope& device_rope(const ops::Rope& r) const {
    return kept(ropes_, &r, [&] {
      return std::make_unique<dev::DeviceRope>(r.inv_freqs(), r.spec().dims,
                                               r.spec().traditional, r.input_scale());
    });
  }
  // Attention's score scratch, grown to the largest call so far.
  float* scratch(int64_t floats) const {
    std::lock_guard<std::mutex> lock(mu_);
    if (scratch_.bytes() < floats * int64_t(sizeof(float)))
      scratch_ = cuda::device_buffer(floats * int64_t(sizeof(float)));
    return scratch_.as<float>();
  }

  mutable std::mutex mu_;
  mutable std::map<WeightKey, std::unique_ptr<DeviceLinear>> linears_;
  mutable std::map<WeightKey, std::unique_ptr<dev::DeviceMatrix>> matrices_;
  mutable std::map<const ops::Rope*, std::unique_ptr<dev::DeviceRope>> ropes_;
  mutable Buffer scratch_;
};

}  // namespace

const ModelBackend& cuda_backend() {
  if (!cuda::device_available())
    fail("the cuda backend: no usable device (", cuda::device_unavailable_reason(), ")");
  static const CudaModelBackend cuda;
  return cuda;
}

}  // namespace moex::backend
