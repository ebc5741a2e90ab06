// `moex make-model`: writes a synthetic MLX-format checkpoint of a preset (config.json,
// safetensors shards <= 5 GB + index, synthetic tokenizer), deterministic for a seed; and
// `--list-presets`.
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "core/error.h"
#include "core/parallel.h"
#include "core/strict_parse.h"
#include "core/sysinfo.h"
#include "model/checkpoint_plan.h"
#include "model/presets.h"
#include "model/synth_weights.h"
#include "model/weight_bytes.h"
#include "tools/command.h"

namespace moex::tools {
namespace {

struct MakeModelFlags {
  std::optional<std::string> preset, layers, bits, group_size, router_bits, down_bits, seed, threads;
  std::string dtype = "bf16";
  std::string out;
  bool list = false;
  bool quiet = false;
};

int list_presets() {
  std::printf("%-20s %-10s %6s %6s %9s %5s %7s %5s %s\n", "preset", "type", "hidden", "Dff",
              "experts", "top", "shared", "lay", "description");
  for (const model::ModelPreset& p : model::all_presets()) {
    std::printf("%-20s %-10s %6lld %6lld %9lld %5lld %7lld %5lld %s\n", p.name.c_str(),
                p.model_type.c_str(), (long long)p.hidden, (long long)p.moe_dff,
                (long long)p.experts, (long long)p.top_k, (long long)p.shared_dff,
                (long long)p.layers, p.description.c_str());
  }
  return 0;
}

int run_make_model(const MakeModelFlags& f) {
  if (f.list) return list_presets();
  if (!f.preset) fail("make-model: --preset is required (see --list-presets)");
  if (f.out.empty()) fail("make-model: --out is required");
  const model::ModelPreset* p = model::find_preset(*f.preset);
  if (!p) fail("make-model: unknown preset '", *f.preset, "' (see --list-presets)");
  if (f.threads) set_num_threads(int(parse_int_strict(*f.threads, "--threads", 1, 1024)));
  model::SynthQuant q;
  if (f.bits) q.bits = int(parse_int_strict(*f.bits, "--bits", 0, 8));
  if (f.group_size) q.group_size = int(parse_int_strict(*f.group_size, "--group-size", 1, 1024));
  if (f.router_bits) q.router_bits = int(parse_int_strict(*f.router_bits, "--router-bits", 0, 8));
  if (f.down_bits) q.down_bits = int(parse_int_strict(*f.down_bits, "--down-bits", 0, 8));
  const int64_t layers = f.layers ? parse_int_strict(*f.layers, "--layers", 1, 10000) : 0;
  model::SynthArgs args;
  args.out_dir = f.out;
  if (f.seed) args.seed = uint64_t(parse_int_strict(*f.seed, "--seed", 0, INT64_MAX));
  const model::CheckpointPlan plan =
      model::plan_preset_checkpoint(*p, layers, q, model::parse_model_dtype(f.dtype));
  const model::WeightBytes wb = model::compute_weight_bytes(plan.config, plan.tensors);
  std::fprintf(stderr, "make-model: %s (%s), %lld layers, %zu tensors, %s -> %s\n", p->name.c_str(),
               plan.config.family.c_str(), (long long)plan.config.num_layers, plan.tensors.size(),
               model::human_bytes(wb.total).c_str(), f.out.c_str());
  int last_pct = -1;
  if (!f.quiet) {
    args.progress = [&](const model::SynthProgress& pr) {
      const int pct = pr.bytes_total > 0 ? int(100 * pr.bytes_done / pr.bytes_total) : 100;
      if (pct / 5 != last_pct / 5) {
        std::fprintf(stderr, "  %3d%%  %s\n", pct, pr.module ? pr.module->c_str() : "");
        last_pct = pct;
      }
    };
  }
  const model::SynthResult r = model::write_synthetic_model(plan, args);
  std::printf("wrote %s: %lld tensors in %lld shard(s), %s of tensor data in %.1f s (%.0f MB/s)\n",
              f.out.c_str(), (long long)r.tensors, (long long)r.shards,
              model::human_bytes(r.tensor_bytes).c_str(), r.seconds,
              r.seconds > 0 ? double(r.tensor_bytes) / r.seconds / 1e6 : 0.0);
  std::printf("bytes read per decoded token: %s (%lld)\n", model::human_bytes(wb.per_token).c_str(),
              (long long)wb.per_token);
  std::printf("peak RSS: %s\n", model::human_bytes(peak_rss_bytes()).c_str());
  return 0;
}

MOEX_REGISTER_COMMAND(make_model, "make-model",
                      "write a synthetic MLX-format MoE checkpoint of a preset",
                      [](CLI::App& sub) -> std::function<int()> {
                        auto f = std::make_shared<MakeModelFlags>();
                        sub.add_option("--preset", f->preset, "preset name (see --list-presets)");
                        sub.add_flag("--list-presets", f->list, "list the presets and exit");
                        sub.add_option("--layers", f->layers, "number of layers (default: the preset's)");
                        sub.add_option("--bits", f->bits, "expert/default bits: 2,3,4,5,6,8, or 0 = unquantized (default 4)");
                        sub.add_option("--group-size", f->group_size, "quantization group size 32|64|128 (default 64)");
                        sub.add_option("--router-bits", f->router_bits, "router bits (default 8; 0 = --bits)");
                        sub.add_option("--down-bits", f->down_bits, "expert down_proj bits (default: --bits)");
                        sub.add_option("--dtype", f->dtype, "float dtype bf16|f16|f32 (default bf16)");
                        sub.add_option("--seed", f->seed, "RNG seed (default 0)");
                        sub.add_option("--threads", f->threads, "threads (default: all cores)");
                        sub.add_option("--out", f->out, "output directory");
                        sub.add_flag("-q,--quiet", f->quiet, "no progress lines");
                        return [f] { return run_make_model(*f); };
                      });

}  // namespace
}  // namespace moex::tools
