// Synthetic checkpoint writer: counter-based RNG values, quantized with quant::quantize_into,
// streamed through io::ShardedCheckpointWriter module by module in row chunks.
#include "model/synth_weights.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "core/atomic_write.h"
#include "core/error.h"
#include "core/parallel.h"
#include "core/sysinfo.h"
#include "io/safetensors_writer.h"
#include "quant/quantize.h"
#include "tokenizer/synthetic_vocab.h"

namespace moex::model {

namespace {

inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ULL;

}  // namespace

uint64_t synth_stream_key(uint64_t seed, const std::string& tensor_name) {
  uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a over the name
  for (unsigned char c : tensor_name) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return mix64(h ^ mix64(seed + kGolden));
}

float synth_z(uint64_t key, uint64_t index) {
  const uint64_t u = mix64(key + (index + 1) * kGolden);  // splitmix64 output #index
  const uint32_t s = uint32_t(u & 0xffff) + uint32_t((u >> 16) & 0xffff) +
                     uint32_t((u >> 32) & 0xffff) + uint32_t(u >> 48);
  // Sum of four U(0,1) (centre-of-bin values): mean 2, variance 1/3.
  constexpr float kInv = 1.0f / 65536.0f;
  const float sum = (float(s) + 2.0f) * kInv;
  return (sum - 2.0f) * 1.7320508f;
}

void synth_fill_f32(uint64_t seed, const std::string& tensor_name, InitDist d, uint64_t first,
                    int64_t n, float* out) {
  const uint64_t key = synth_stream_key(seed, tensor_name);
  parallel_for(n, [&](int64_t lo, int64_t hi) {
    for (int64_t i = lo; i < hi; ++i) out[i] = d.mean + d.std * synth_z(key, first + uint64_t(i));
  });
}

namespace {
constexpr float kStd = 0.02f;        // projections, experts, embeddings, LM head
constexpr float kEmbedStd = kStd;
constexpr float kMixerShare = 0.5f;  // see the residual_out case below
}  // namespace

InitDist init_distribution(const ModuleSpec& m, TensorPart part, const ModelConfig& cfg) {
  const float inv_sqrt_h = 1.0f / std::sqrt(float(cfg.hidden));
  // What the attention / short-conv output projections of one layer may add to the residual
  // (rms), see the residual_out case below.
  const float mixer_out_rms =
      kMixerShare * kEmbedStd / std::sqrt(float(std::max<int64_t>(cfg.num_layers, 1)));
  const bool mixer_out =
      m.residual_out && (m.role == TensorRole::kAttention || m.role == TensorRole::kShortConv ||
                         m.role == TensorRole::kLinearAttention ||
                         m.role == TensorRole::kStateSpace);
  if (part == TensorPart::kBias) {
    if (m.kind == ModuleKind::kLayerNorm) return {0.f, 0.01f};
    // A bias on a residual-writing projection adds the same vector at every position.
    if (m.residual_out) return {0.f, 0.5f * mixer_out_rms};
    return {0.f, kStd};
  }
  // A model without a softmax scale (Gemma-4: attention scale 1) has it in its per-head q/k
  // norm weights, as trained ones do: head_dim^-0.25 each, so that q.k has the usual
  // head_dim^-0.5 (with weights around 1 the softmax is all but one-hot and rounding-chaotic).
  if (cfg.attn_scale == 1.0 && (m.slot == Slot::kQNorm || m.slot == Slot::kKNorm) &&
      cfg.qk_norm == QkNormKind::kPerHead)
    return {std::pow(float(m.shape[0]), -0.25f), 0.02f * std::pow(float(m.shape[0]), -0.25f)};
  switch (m.kind) {
    case ModuleKind::kNorm:
    case ModuleKind::kLayerNorm: return {1.0f, 0.02f};
    case ModuleKind::kConv1d: return {0.f, 0.2f};
    case ModuleKind::kTensor:
      // Gemma-4's multiplicative vectors (router input norm weight, per-expert score scale,
      // layer scalar) sit around 1 like norm weights.
      if (m.slot == Slot::kRouterInputScale || m.slot == Slot::kRouterExpertScale ||
          m.slot == Slot::kLayerScalar)
        return {1.0f, 0.02f};
      // Gated DeltaNet: A_log spread so that the heads' decays differ (exp(-e^A softplus(.)));
      // dt_bias around 0.
      if (m.slot == Slot::kGdnALog) return {0.f, 0.5f};
      if (m.slot == Slot::kGdnDtBias) return {0.f, 0.1f};
      // Mamba-2: A = -exp(A_log) around -0.37, so that with dt ~ softplus(0) the per-step
      // decays spread around 0.8 (some memory over a short prompt); D around mlx-lm's 1.
      if (m.slot == Slot::kMambaALog) return {-1.f, 0.5f};
      if (m.slot == Slot::kMambaDtBias) return {0.f, 0.1f};
      if (m.slot == Slot::kMambaD) return {1.f, 0.1f};
      return {0.f, 0.01f};  // LFM2 expert_bias: small vs sigmoid spread
    default: break;
  }
  switch (m.role) {
    case TensorRole::kRouter:
    case TensorRole::kSharedExpertGate: return {0.f, inv_sqrt_h};
    default: break;
  }
  if (mixer_out) {
    // Random attention is near uniform, so its output is a prefix average shared by all
    // later positions; at std 0.02 it would outweigh the token's own embedding (std 0.02)
    // many times, every position would look alike and route to the same experts. The
    // mixer's output projection is scaled so that all layers together add about kMixerShare
    // of the embedding's rms (its input has rms kStd*sqrt(H) for a normalized layer input).
    const float in_rms = kStd * std::sqrt(float(cfg.hidden));
    return {0.f, mixer_out_rms / (in_rms * std::sqrt(float(m.in_dim())))};
  }
  return {0.f, kStd};
}

namespace {

class ModelWriter {
 public:
  ModelWriter(const CheckpointPlan& plan, const SynthArgs& args)
      : plan_(plan), args_(args), writer_(args.out_dir, args.max_shard_bytes) {}

  SynthResult run() {
    const double t0 = now_seconds();
    for (const TensorRecord& t : plan_.tensors) {
      writer_.declare({t.name, t.dtype, t.shape});
      total_ += t.bytes();
    }
    writer_.set_metadata("format", "mlx");
    size_t i = 0;
    for (const ModuleSpec& m : plan_.modules) {
      size_t j = i;
      while (j < plan_.tensors.size() && plan_.tensors[j].module == m.path) ++j;
      if (j == i) fail("make-model: no tensors planned for module ", m.path);
      write_module(m, i, j);
      i = j;
    }
    if (i != plan_.tensors.size()) fail("make-model: tensor plan out of module order at ", plan_.tensors[i].name);
    writer_.finish();
    SynthResult r;
    r.tensor_bytes = total_;
    r.tensors = int64_t(plan_.tensors.size());
    r.shards = int64_t(writer_.shard_files().size());
    r.seconds = now_seconds() - t0;
    return r;
  }

 private:
  void progress(const std::string& module) {
    if (args_.progress) args_.progress({done_, total_, &module});
  }

  // Streams a float tensor (values of stream `name`) in chunks.
  void write_float(const ModuleSpec& m, const TensorRecord& t, InitDist d) {
    const int64_t n = t.numel();
    const int64_t chunk = std::max<int64_t>(1, args_.chunk_values);
    f32_.resize(size_t(std::min(n, chunk)));
    bytes_.resize(f32_.size() * dtype_size(t.dtype));
    for (int64_t at = 0; at < n; at += chunk) {
      const int64_t len = std::min(chunk, n - at);
      synth_fill_f32(args_.seed, t.name, d, uint64_t(at), len, f32_.data());
      convert(t.dtype, len);
      writer_.write_chunk(t.name, bytes_.data(), uint64_t(len) * dtype_size(t.dtype));
      done_ += len * int64_t(dtype_size(t.dtype));
      progress(m.path);
    }
  }

  void convert(DType dt, int64_t len) {
    parallel_for(len, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) store_from_f32(bytes_.data(), dt, size_t(i), f32_[size_t(i)]);
    });
  }

  // z is null for the fp modes (no biases); their scales are U8 codes.
  void write_quantized(const ModuleSpec& m, const TensorRecord& w, const TensorRecord& s,
                       const TensorRecord* z) {
    const int64_t in = m.in_dim();
    const int64_t rows = w.numel() / w.shape.back();
    const DType dt = z ? s.dtype : plan_.dtype;  // the dtype quantized from
    const InitDist d = init_distribution(m, TensorPart::kWeight, plan_.config);
    const int64_t chunk_rows = std::max<int64_t>(1, args_.chunk_values / in);
    const int64_t groups = in / w.group_size, words = in * w.bits / 32;
    std::vector<uint8_t> scales(size_t(s.bytes())), biases(size_t(z ? z->bytes() : 0));
    f32_.resize(size_t(std::min(rows, chunk_rows) * in));
    bytes_.resize(f32_.size() * dtype_size(dt));
    packed_.resize(size_t(std::min(rows, chunk_rows) * words));
    for (int64_t r0 = 0; r0 < rows; r0 += chunk_rows) {
      const int64_t nr = std::min(chunk_rows, rows - r0);
      // Values are keyed by the float weight's name, so they do not depend on the bits.
      synth_fill_f32(args_.seed, w.name, d, uint64_t(r0 * in), nr * in, f32_.data());
      convert(dt, nr * in);
      quant::QuantizeArgs qa;
      qa.data = bytes_.data();
      qa.dtype = dt;
      qa.rows = nr;
      qa.k = in;
      qa.bits = w.bits;
      qa.group_size = w.group_size;
      qa.mode = w.mode;
      const size_t sb_off = size_t(r0 * groups) * dtype_size(s.dtype);
      quant::quantize_into(qa, packed_.data(), scales.data() + sb_off,
                           z ? biases.data() + sb_off : nullptr);
      writer_.write_chunk(w.name, packed_.data(), uint64_t(nr * words) * 4);
      done_ += nr * words * 4;
      progress(m.path);
    }
    writer_.write(s.name, scales.data(), scales.size());
    if (z) writer_.write(z->name, biases.data(), biases.size());
    done_ += int64_t(scales.size() + biases.size());
  }

  void write_module(const ModuleSpec& m, size_t lo, size_t hi) {
    const TensorRecord& w = plan_.tensors[lo];
    size_t next = lo + 1;
    if (w.dtype == DType::U32) {
      const size_t parts = quant::is_fp_mode(w.mode) ? 2 : 3;
      if (hi - lo < parts)
        fail("make-model: quantized module ", m.path, " lacks scales/biases in the plan");
      write_quantized(m, w, plan_.tensors[lo + 1], parts == 3 ? &plan_.tensors[lo + 2] : nullptr);
      next = lo + parts;
    } else {
      write_float(m, w, init_distribution(m, TensorPart::kWeight, plan_.config));
    }
    for (size_t k = next; k < hi; ++k)
      write_float(m, plan_.tensors[k], init_distribution(m, plan_.tensors[k].part, plan_.config));
  }

  const CheckpointPlan& plan_;
  const SynthArgs& args_;
  io::ShardedCheckpointWriter writer_;
  std::vector<float> f32_;
  std::vector<uint8_t> bytes_;
  std::vector<uint32_t> packed_;
  int64_t done_ = 0, total_ = 0;
};

}  // namespace

SynthResult write_synthetic_checkpoint(const CheckpointPlan& plan, const SynthArgs& args) {
  if (args.out_dir.empty()) fail("make-model: --out is required");
  std::error_code ec;
  std::filesystem::create_directories(args.out_dir, ec);
  if (ec) fail(args.out_dir, ": cannot create directory: ", ec.message());
  // Shards of an earlier run would be loaded alongside the new ones (mlx-lm globs
  // model*.safetensors): remove them first.
  for (const auto& e : std::filesystem::directory_iterator(args.out_dir, ec)) {
    const std::string n = e.path().filename().string();
    const bool shard = n.rfind("model", 0) == 0 && n.size() > 12 && n.substr(n.size() - 12) == ".safetensors";
    if (shard || n == "model.safetensors.index.json") std::filesystem::remove(e.path(), ec);
  }
  write_file_plain(args.out_dir + "/config.json", plan.config_json.dump(2) + "\n", "make-model:");
  ModelWriter w(plan, args);
  return w.run();
}

SynthResult write_synthetic_model(const CheckpointPlan& plan, const SynthArgs& args) {
  SynthResult r = write_synthetic_checkpoint(plan, args);
  write_synthetic_tokenizer(args.out_dir, plan.config.vocab);
  return r;
}

}  // namespace moex::model
