// `moex inspect DIR`: a checkpoint's architecture and layer plan, every tensor's dtype, shape
// and quantization, total bytes, the bytes read per decoded token, and what the fused-MoE
// dispatch policy would decide for each kind of MoE layer (with the cap in force). Given a
// GGUF file instead, its metadata and tensor table (util_gguf_info.h).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "chat/template_files.h"
#include "core/error.h"
#include "core/isa.h"
#include "core/sysinfo.h"
#include "io/safetensors.h"
#include "kernels/precision.h"
#include "model/model_checkpoint.h"
#include "model/moe_layer_info.h"
#include "model/weight_bytes.h"
#include "moe/calibration.h"
#include "moe/dispatch_policy.h"
#include "moe/online_measure.h"
#include "generate/reasoning.h"
#include "generate/tool_calls.h"
#include "quant/format.h"
#include "tools/command.h"
#include "tools/util_gguf_info.h"

namespace moex::tools {
namespace {

struct InspectFlags {
  std::string dir;
  bool summary = false;
};

std::string quant_text(const std::optional<io::ModuleQuant>& q) {
  if (!q) return "float";
  if (q->mode != io::kAffineMode) return str_cat(q->mode, " g", q->group_size);  // mxfp4, ...
  return str_cat(q->bits, "-bit g", q->group_size);
}

void print_architecture(const model::ModelConfig& c) {
  std::printf("architecture: %s (model_type %s)\n", c.family.c_str(), c.model_type.c_str());
  std::printf("  hidden %lld, vocab %lld, layers %lld (%lld MoE), max_position %lld\n",
              (long long)c.hidden, (long long)c.vocab, (long long)c.num_layers,
              (long long)c.num_moe_layers(), (long long)c.max_position);
  std::printf("  attention: %lld heads / %lld kv heads / head_dim %lld, biases q%d k%d v%d o%d, "
              "q/k norm %s, rope %s theta %g%s%s\n",
              (long long)c.heads, (long long)c.kv_heads, (long long)c.head_dim, c.q_bias, c.k_bias,
              c.v_bias, c.o_bias, model::qk_norm_kind_name(c.qk_norm), model::rope_kind_name(c.rope.kind),
              c.rope.theta, c.rope.traditional ? " (traditional)" : "",
              c.rope.dims > 0 && c.rope.dims < c.head_dim
                  ? str_cat(" on ", c.rope.dims, " of ", c.head_dim, " dims").c_str()
                  : "");
  std::printf("  norm %s eps %g, tied embeddings %s, lm_head bias %s\n", model::norm_kind_name(c.norm),
              c.norm_eps, c.tie_word_embeddings ? "yes" : "no", c.lm_head_bias ? "yes" : "no");
  if (c.num_moe_layers() > 0)
    std::printf("  moe: %lld experts, top-%lld, Dff %lld, router %s%s, shared expert %s\n",
                (long long)c.moe.num_experts, (long long)c.moe.top_k, (long long)c.moe.expert_dff,
                moe::router_summary(c.moe.router).c_str(), c.moe.use_expert_bias ? " + expert_bias" : "",
                c.moe.shared_dff > 0 ? str_cat(c.moe.shared_dff, c.moe.shared_expert_gated ? " (gated)" : "").c_str()
                                     : "none");
  const int64_t fixed = model::recurrent_state_bytes(c);
  std::printf("  decode state per sequence: KV cache %lld bytes per token of context (%lld with "
              "--kv-cache f16)%s\n",
              (long long)model::kv_cache_bytes_per_token(c),
              (long long)model::kv_cache_bytes_per_token(c, DType::F16),
              fixed > 0 ? str_cat(", recurrent states ", fixed, " bytes (",
                                  model::human_bytes(fixed), ") whatever the context").c_str()
                        : "");
  if (const int64_t full = model::mla_full_kv_bytes_per_token(c); full > 0) {
    const int64_t kv = model::kv_cache_bytes_per_token(c);
    std::printf("  multi-head latent attention: q_lora %lld, kv_lora %lld, nope %lld + rope %lld, "
                "v %lld; the cache holds %lld floats per token per layer (%lld bytes per token "
                "in all) where full per-head K/V would hold %lld bytes (%.1fx less)\n",
                (long long)c.mla.q_lora_rank, (long long)c.mla.kv_lora_rank,
                (long long)c.mla.nope_dim, (long long)c.mla.rope_dim, (long long)c.mla.v_head_dim,
                (long long)c.mla.cache_dim(), (long long)kv, (long long)full,
                double(full) / double(kv));
  }
  std::string eos;
  for (int64_t e : c.eos_token_ids) eos += (eos.empty() ? "" : ", ") + std::to_string(e);
  std::printf("  eos token ids: [%s]\n", eos.c_str());
}

// The chat template and how `serve` reads answers written with it (docs/serve.md).
void print_chat_template(const std::string& dir) {
  try {
    const chat::ChatTemplateSource t = chat::load_chat_template(dir, /*with_tools=*/true);
    std::printf("chat template: %s; tool-call parser %s, reasoning %s\n", t.origin.c_str(),
                generate::tool_call_format_name(generate::detect_tool_call_format(t.source)),
                generate::reasoning_format_name(generate::detect_reasoning_format(t.source)));
  } catch (const Error& e) {
    std::printf("chat template: none (%s)\n", e.what());
  }
}

// One line per run of consecutive MoE layers with the same shape and storage.
void print_dispatch(const model::ModelCheckpoint& m, const moe::FusedSettings& settings) {
  const std::vector<model::MoeLayerInfo> infos = model::moe_layer_infos(m);
  if (infos.empty()) return;
  const std::optional<moe::CalibratedCap> cpu_calibration =
      moe::load_calibrated_cap(moe::host_cpu_calibration_key());
  std::printf("fused-MoE dispatch (decode, 1 token; settings from the environment):\n");
  std::printf("  cpu kernels: isa %s, activation precision %s (MOEX_ISA, MOEX_PRECISION)\n",
              isa_name(active_isa()), kernels::active_precision_label());
  auto key = [](const model::MoeLayerInfo& i) {
    return str_cat(i.dff, "/", quant_text(i.gate), "/", quant_text(i.up), "/", quant_text(i.down), "/", i.stacked);
  };
  for (size_t a = 0; a < infos.size();) {
    size_t b = a + 1;
    while (b < infos.size() && key(infos[b]) == key(infos[a])) ++b;
    const model::MoeLayerInfo& i = infos[a];
    std::printf("  layers %lld-%lld: Dff %lld, Din %lld, top-%lld, gate %s, up %s, down %s%s\n",
                (long long)i.layer, (long long)infos[b - 1].layer, (long long)i.dff, (long long)i.din,
                (long long)i.top_k, quant_text(i.gate).c_str(), quant_text(i.up).c_str(),
                quant_text(i.down).c_str(), i.stacked ? "" : " (per-expert layout)");
    for (moe::Backend be : {moe::Backend::kCpu, moe::Backend::kCuda}) {
      moe::DispatchInputs in;
      in.tokens = 1;
      in.dff = i.dff;
      in.din = i.din;
      in.top_k = i.top_k;
      auto pq = [](const std::optional<io::ModuleQuant>& q) {
        moe::ProjectionQuant p;
        if (!q) {  // unquantized: the policy needs only the element width
          p.mode = quant::Mode::kFloat;
          p.bits = 16;
          p.group_size = 0;
          p.has_biases = false;
        } else {
          const auto mode = quant::mode_from_name(q->mode, true);
          p.mode = mode.value_or(quant::Mode::kAffine);
          p.has_biases = p.mode == quant::Mode::kAffine;
          p.bits = q->bits;
          p.group_size = q->group_size;
        }
        return p;
      };
      in.gate = pq(i.gate);
      in.up = pq(i.up);
      in.down = pq(i.down);
      in.stacked = i.stacked;
      in.backend = be;
      in.settings = settings;
      // The same lookup the engine makes (its CUDA key needs a device, which inspect does
      // not open).
      if (be == moe::Backend::kCpu) in.calibration = cpu_calibration;
      const moe::DispatchDecision d = moe::decide_path(in);
      std::printf("    %-4s %s\n", moe::backend_name(be), d.explanation().c_str());
    }
    a = b;
  }
  // What the engine would do about measuring on the cpu backend in one process.
  moe::MeasureContext mc;
  mc.settings = settings;
  mc.calibration = cpu_calibration;
  mc.enabled = moe::measurement_enabled_by_environment();
  std::printf("  cpu policy at load: %s\n",
              moe::plan_online_measurement(mc, moex_commit()).why.c_str());
}

int run_inspect(const InspectFlags& f) {
  if (is_gguf_file(f.dir)) return print_gguf_info(f.dir, f.summary);
  // A malformed MOEX_FUSED_MOE* variable is an error (exit 2) before any output, as in the
  // commands that run the model.
  const moe::FusedSettings settings = moe::resolve_fused_settings(moe::with_environment({}));
  model::CheckOptions opt;
  opt.allow_per_expert_layout = true;
  const model::ModelCheckpoint m = model::open_model_checkpoint(f.dir, opt);
  std::printf("checkpoint: %s (%zu files, %zu tensors)\n", f.dir.c_str(), m.weights.files().size(),
              m.weights.size());
  print_architecture(m.config);
  print_chat_template(f.dir);
  std::printf("layer plan:\n");
  for (int64_t i = 0; i < m.config.num_layers; ++i)
    std::printf("  %s\n", model::describe_layer(m.config, i).c_str());
  if (!f.summary) {
    std::printf("tensors:\n");
    for (const model::TensorRecord& t : m.tensors) {
      const std::string q = t.bits == 0 ? std::string("-")
                            : quant::is_fp_mode(t.mode)
                                ? str_cat(quant::mode_name(t.mode), " g", t.group_size)
                                : str_cat(t.bits, "-bit g", t.group_size);
      std::printf("  %-64s %-5s %-22s %-10s %s\n", t.name.c_str(), dtype_name(t.dtype),
                  io::shape_to_string(t.shape).c_str(), q.c_str(), model::tensor_role_name(t.role));
    }
  }
  for (const std::string& n : m.unknown_tensors) std::printf("  unknown tensor (not used): %s\n", n.c_str());
  for (const std::string& p : m.per_expert_layouts)
    std::printf("  needs stacking: %s (per-expert Hugging Face layout)\n", p.c_str());
  for (const auto& [stored, read] : m.renamed_tensors)
    std::printf("  renamed: %s read as %s (as mlx-lm's sanitize renames it)\n", stored.c_str(),
                read.c_str());
  if (!m.dropped_tensors.empty())
    std::printf("  dropped: %zu tensors mlx-lm's sanitize drops (e.g. %s)\n",
                m.dropped_tensors.size(), m.dropped_tensors.front().c_str());
  // The multi-token-prediction module is among them where the checkpoint kept it.
  const std::string mtp = "model.layers." + std::to_string(m.config.num_layers) + ".enorm.weight";
  if (m.weights.find(mtp))
    std::printf("  multi-token-prediction module: model.layers.%lld (generate --spec mtp "
                "drafts with it)\n", (long long)m.config.num_layers);
  const model::WeightBytes wb = model::compute_weight_bytes(m.config, m.tensors);
  std::printf("%s", model::format_weight_bytes(wb).c_str());
  print_dispatch(m, settings);
  return 0;
}

MOEX_REGISTER_COMMAND(inspect, "inspect",
                      "show a checkpoint's architecture, tensors and bytes read per token (or a GGUF file's "
                      "metadata and tensors)",
                      [](CLI::App& sub) -> std::function<int()> {
                        auto f = std::make_shared<InspectFlags>();
                        sub.add_option("dir", f->dir, "model directory, or a .gguf file")
                            ->type_name("DIR|FILE.gguf")
                            ->required();
                        sub.add_flag("--summary", f->summary, "omit the per-tensor listing");
                        return [f] { return run_inspect(*f); };
                      });

}  // namespace
}  // namespace moex::tools
