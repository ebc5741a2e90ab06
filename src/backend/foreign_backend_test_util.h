// A test backend whose memory is foreign to the host code of a case: the CPU backend's ops
// behind the contract, but memory() says kCuda, so the conformance harness stages every input
// and output as it does for a device, and every op first checks that each activation pointer
// it is given lies inside an allocation of this backend (weights, which a backend uploads
// itself, are exempt). A case that hands an op a host vector directly, or a harness that
// forgets to stage, fails here on a machine without a GPU. Results are the CPU backend's bits.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "backend/model_backend.h"
#include "core/error.h"

namespace moex::backend::conformance {

class ForeignMemoryBackend final : public ModelBackend {
 public:
  const char* name() const override { return "foreign-memory-check"; }
  Memory memory() const override { return Memory::kCuda; }
  bool supports_op(Op op) const override { return op != Op::kCount; }

  Buffer alloc(int64_t bytes) const override {
    if (bytes <= 0) return {};
    void* p = std::calloc(size_t(bytes), 1);
    if (!p) fail("foreign-memory-check: out of memory");
    std::lock_guard<std::mutex> lock(mu_);
    ranges_[static_cast<const char*>(p)] = bytes;
    return Buffer(p, bytes, Memory::kCuda, [](void* q) {
      {
        std::lock_guard<std::mutex> l(mu_);
        ranges_.erase(static_cast<const char*>(q));
      }
      std::free(q);
    });
  }
  void upload(void* dst, const void* host_src, int64_t bytes) const override {
    mine(dst, "upload's destination");
    if (bytes > 0) std::memcpy(dst, host_src, size_t(bytes));
  }
  void zero(void* dst, int64_t bytes) const override {
    mine(dst, "zero's destination");
    if (bytes > 0) std::memset(dst, 0, size_t(bytes));
  }
  void download(void* host_dst, const void* src, int64_t bytes) const override {
    mine(src, "download's source");
    if (bytes > 0) std::memcpy(host_dst, src, size_t(bytes));
  }

  void linear(const ops::LinearArgs& a) const override {
    mine(a.x, "linear x"), mine(a.out, "linear out");
    cpu().linear(a);
  }
  void linear_same_input(const ops::Linear* const* lins, float* const* outs, int count,
                         const float* x, int64_t rows) const override {
    mine(x, "linear_same_input x");
    for (int i = 0; i < count; ++i) mine(outs[i], "linear_same_input out");
    cpu().linear_same_input(lins, outs, count, x, rows);
  }
  void rms_norm(const ops::RmsNormArgs& a) const override {
    mine(a.x, "rms_norm x"), mine(a.out, "rms_norm out"), maybe(a.weight, "rms_norm weight");
    cpu().rms_norm(a);
  }
  void layer_norm(const ops::LayerNormArgs& a) const override {
    mine(a.x, "layer_norm x"), mine(a.out, "layer_norm out");
    maybe(a.weight, "layer_norm weight"), maybe(a.bias, "layer_norm bias");
    cpu().layer_norm(a);
  }
  void rope(const ops::Rope& rope, float* x, int64_t rows, int64_t heads, int64_t head_dim,
            int64_t pos0) const override {
    mine(x, "rope x");
    cpu().rope(rope, x, rows, heads, head_dim, pos0);
  }
  void kv_append(ops::KvCache& cache, const float* k, const float* v,
                 int64_t rows) const override {
    mine(cache.keys(), "kv cache keys"), mine(k, "kv_append k"), maybe(v, "kv_append v");
    // The CPU op appends on the host, which a foreign cache refuses: copy as a device would.
    cache.check_room(rows);
    const int64_t hd = cache.head_dim(), kvh = cache.kv_heads();
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t h = 0; h < kvh; ++h) {
        std::memcpy(cache.keys() + cache.offset(cache.length() + r, h), k + (r * kvh + h) * hd,
                    size_t(hd) * sizeof(float));
        if (cache.has_values())
          std::memcpy(cache.values() + cache.offset(cache.length() + r, h),
                      v + (r * kvh + h) * hd, size_t(hd) * sizeof(float));
      }
    cache.grow(rows);
  }
  void attention(const ops::AttentionArgs& a) const override {
    mine(a.q, "attention q"), mine(a.out, "attention out"), maybe(a.sinks, "attention sinks");
    mine(a.cache->keys(), "attention cache");
    cpu().attention(a);
  }
  void embedding_rows(const ops::MatrixRef& table, const int32_t* tokens, int64_t n,
                      float* out) const override {
    mine(tokens, "embedding tokens"), mine(out, "embedding out");
    cpu().embedding_rows(table, tokens, n, out);
  }
  void swiglu(const float* gate, const float* up, float* out, int64_t n) const override {
    mine(gate, "swiglu gate"), mine(up, "swiglu up"), mine(out, "swiglu out");
    cpu().swiglu(gate, up, out, n);
  }
  void gated_activation(kernels::Activation act, const float* gate, const float* up, float* out,
                        int64_t n) const override {
    maybe(gate, "gated_activation gate"), mine(up, "gated_activation up");
    mine(out, "gated_activation out");
    cpu().gated_activation(act, gate, up, out, n);
  }
  void gated_delta(const ops::GatedDeltaArgs& a) const override {
    for (const void* p : {(const void*)a.q, (const void*)a.k, (const void*)a.v, (const void*)a.g,
                          (const void*)a.beta, (const void*)a.state, (const void*)a.out})
      mine(p, "gated_delta argument");
    cpu().gated_delta(a);
  }
  void ssm_scan(const ops::SsmScanArgs& a) const override {
    for (const void* p : {(const void*)a.x, (const void*)a.dt, (const void*)a.a, (const void*)a.b,
                          (const void*)a.c, (const void*)a.d, (const void*)a.state,
                          (const void*)a.out})
      mine(p, "ssm_scan argument");
    cpu().ssm_scan(a);
  }
  void causal_conv_silu(const ops::CausalConvArgs& a) const override {
    mine(a.x, "conv x"), mine(a.w, "conv w"), maybe(a.bias, "conv bias"), mine(a.out, "conv out");
    cpu().causal_conv_silu(a);
  }
  void gated_rms_norm(const ops::GatedRmsNormArgs& a) const override {
    mine(a.x, "gated_rms_norm x"), mine(a.gate, "gated_rms_norm gate");
    mine(a.weight, "gated_rms_norm weight"), mine(a.out, "gated_rms_norm out");
    cpu().gated_rms_norm(a);
  }
  void short_conv(const ops::ShortConvArgs& a) const override {
    mine(a.bcx, "short_conv bcx"), mine(a.w, "short_conv w"), maybe(a.bias, "short_conv bias");
    mine(a.state, "short_conv state"), mine(a.padded, "short_conv padded");
    mine(a.out, "short_conv out");
    cpu().short_conv(a);
  }
  void multi_linear(const ops::MultiLinearArgs& a) const override {
    mine(a.x, "multi_linear x"), mine(a.out, "multi_linear out");
    cpu().multi_linear(a);
  }
  void mla_attention(const ops::MlaAttentionArgs& a) const override {
    mine(a.q, "mla q"), mine(a.out, "mla out"), mine(a.cache->keys(), "mla cache");
    cpu().mla_attention(a);
  }
  void add_scaled(float* x, const float* y, int64_t n, float scale) const override {
    mine(x, "add_scaled x"), mine(y, "add_scaled y");
    cpu().add_scaled(x, y, n, scale);
  }
  void scale(float* x, int64_t n, float s) const override {
    mine(x, "scale x");
    cpu().scale(x, n, s);
  }
  void sigmoid_gate(float* x, const float* gate, int64_t n) const override {
    mine(x, "sigmoid_gate x"), mine(gate, "sigmoid_gate gate");
    cpu().sigmoid_gate(x, gate, n);
  }
  void divide_and_softcap(float* x, int64_t n, float divisor, float cap) const override {
    mine(x, "divide_and_softcap x");
    cpu().divide_and_softcap(x, n, divisor, cap);
  }
  void query_temperature(const ops::QueryTemperatureArgs& a) const override {
    mine(a.q, "query_temperature q");
    cpu().query_temperature(a);
  }
  void split_halves(const float* src, float* first, float* second, int64_t rows,
                    int64_t half) const override {
    mine(src, "split src"), mine(first, "split first"), mine(second, "split second");
    cpu().split_halves(src, first, second, rows, half);
  }
  void copy_columns(const ops::CopyColumnsArgs& a) const override {
    mine(a.src, "copy_columns src"), mine(a.dst, "copy_columns dst");
    cpu().copy_columns(a);
  }
  void dt_softplus(const ops::DtSoftplusArgs& a) const override {
    mine(a.x, "dt_softplus x"), mine(a.bias, "dt_softplus bias"), mine(a.out, "dt_softplus out");
    cpu().dt_softplus(a);
  }
  void delta_gates(const ops::DeltaGatesArgs& a) const override {
    mine(a.a, "delta_gates a"), mine(a.b, "delta_gates b"), mine(a.neg_exp_a_log, "delta_gates neg_exp_a_log");
    mine(a.dt_bias, "delta_gates dt_bias");
    cpu().delta_gates(a);
  }
  void copy(float* dst, const float* src, int64_t n) const override {
    mine(dst, "copy dst"), mine(src, "copy src");
    cpu().copy(dst, src, n);
  }

 private:
  static const ModelBackend& cpu() { return cpu_backend(); }
  // Throws moex::Error naming `what` unless p lies inside one of this backend's allocations.
  void mine(const void* p, const char* what) const {
    const char* c = static_cast<const char*>(p);
    std::lock_guard<std::mutex> lock(mu_);
    auto it = ranges_.upper_bound(c);
    if (p && it != ranges_.begin()) {
      --it;
      if (c < it->first + it->second) return;
    }
    fail("foreign-memory-check: ", what, " is not memory of this backend (an unstaged host "
         "pointer)");
  }
  void maybe(const void* p, const char* what) const {
    if (p) mine(p, what);
  }
  // The live allocations (a freed block's addresses may come back as host memory).
  static inline std::mutex mu_;
  static inline std::map<const char*, int64_t> ranges_;
};

}  // namespace moex::backend::conformance
