// The CPU backend: host memory and the ops of backend/cpu (SIMD per the active ISA, threads of
// core/parallel). Every op of the contract is supported.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "kernels/elementwise.h"
#include "backend/model_backend.h"
#include "backend/cpu/softmax.h"
#include "core/error.h"

namespace moex::backend {
namespace {

void free_host(void* p) { std::free(p); }

class CpuModelBackend final : public ModelBackend {
 public:
  const char* name() const override { return "cpu"; }
  Memory memory() const override { return Memory::kHost; }
  bool supports_op(Op op) const override { return op != Op::kCount; }

  Buffer alloc(int64_t bytes) const override {
    if (bytes < 0) throw Error("cpu backend: alloc of a negative size " + std::to_string(bytes));
    if (bytes == 0) return {};
    // calloc: large blocks come as untouched zero pages, committed as they are written.
    void* p = std::calloc(size_t(bytes), 1);
    if (!p) throw Error("cpu backend: out of memory allocating " + std::to_string(bytes) + " bytes");
    return Buffer(p, bytes, Memory::kHost, free_host);
  }
  void upload(void* dst, const void* host_src, int64_t bytes) const override {
    if (bytes > 0) std::memcpy(dst, host_src, size_t(bytes));
  }
  void download(void* host_dst, const void* src, int64_t bytes) const override {
    if (bytes > 0) std::memcpy(host_dst, src, size_t(bytes));
  }
  void zero(void* dst, int64_t bytes) const override {
    if (bytes > 0) std::memset(dst, 0, size_t(bytes));
  }

  void linear(const ops::LinearArgs& a) const override { ops::linear(a); }
  void linear_same_input(const ops::Linear* const* lins, float* const* outs, int count,
                         const float* x, int64_t rows) const override {
    ops::linear_same_input(lins, outs, count, x, rows);
  }
  void rms_norm(const ops::RmsNormArgs& a) const override { ops::rms_norm(a); }
  void layer_norm(const ops::LayerNormArgs& a) const override { ops::layer_norm(a); }
  void rope(const ops::Rope& rope, float* x, int64_t rows, int64_t heads, int64_t head_dim,
            int64_t pos0) const override {
    rope.apply_rows(x, rows, heads, head_dim, pos0);
  }
  void kv_append(ops::KvCache& cache, const float* k, const float* v,
                 int64_t rows) const override {
    cache.append(k, v, rows);
  }
  void attention(const ops::AttentionArgs& a) const override { ops::attention(a); }
  void embedding_rows(const ops::MatrixRef& table, const int32_t* tokens, int64_t n,
                      float* out) const override {
    for (int64_t i = 0; i < n; ++i) ops::embedding_row(table, tokens[i], out + i * table.k());
  }
  void gated_delta(const ops::GatedDeltaArgs& a) const override { ops::gated_delta(a); }
  void ssm_scan(const ops::SsmScanArgs& a) const override { ops::ssm_scan(a); }
  void causal_conv_silu(const ops::CausalConvArgs& a) const override {
    ops::causal_conv_silu(a);
  }
  void gated_rms_norm(const ops::GatedRmsNormArgs& a) const override { ops::gated_rms_norm(a); }
  void short_conv(const ops::ShortConvArgs& a) const override { ops::short_conv(a); }
  void multi_linear(const ops::MultiLinearArgs& a) const override { ops::multi_linear(a); }
  void mla_attention(const ops::MlaAttentionArgs& a) const override { ops::mla_attention(a); }
  void swiglu(const float* gate, const float* up, float* out, int64_t n) const override {
    ops::swiglu(gate, up, out, n);
  }
  void gated_activation(kernels::Activation act, const float* gate, const float* up, float* out,
                        int64_t n) const override {
    if (act == kernels::Activation::kSwiGLU) return ops::swiglu(gate, up, out, n);
    kernels::apply_activation({.act = act, .gate = gate, .up = up, .rows = 1, .n = n, .out = out});
  }
  void add_scaled(float* x, const float* y, int64_t n, float scale) const override {
    ops::add_scaled(x, y, n, scale);
  }
  void scale(float* x, int64_t n, float s) const override { ops::scale_in_place(x, n, s); }
  void sigmoid_gate(float* x, const float* gate, int64_t n) const override {
    ops::sigmoid_gate(x, gate, n);
  }
  void divide_and_softcap(float* x, int64_t n, float divisor, float cap) const override {
    ops::divide_and_softcap(x, n, divisor, cap);
  }
  void query_temperature(const ops::QueryTemperatureArgs& a) const override {
    ops::query_temperature(a);
  }
  void split_halves(const float* src, float* first, float* second, int64_t rows,
                    int64_t half) const override {
    ops::split_halves(src, first, second, rows, half);
  }
  void copy_columns(const ops::CopyColumnsArgs& a) const override { ops::copy_columns(a); }
  void dt_softplus(const ops::DtSoftplusArgs& a) const override { ops::dt_softplus(a); }
  void delta_gates(const ops::DeltaGatesArgs& a) const override { ops::delta_gates(a); }
  void copy(float* dst, const float* src, int64_t n) const override { std::copy_n(src, n, dst); }
};

}  // namespace

const ModelBackend& cpu_backend() {
  static const CpuModelBackend cpu;
  return cpu;
}

}  // namespace moex::backend

namespace moex::ops {

KvCache::KvCache(int64_t kv_heads, int64_t head_dim, int64_t capacity, bool values, DType dtype)
    : KvCache(backend::cpu_backend().new_kv_cache(kv_heads, head_dim, capacity, values, dtype)) {}

}  // namespace moex::ops
