// `moex convert HF_DIR --out DIR`: a Hugging Face checkpoint to the mlx-community layout with
// mlx_lm convert's flags, defaults and output (model/convert/hf_convert.h), with a progress
// line (bytes, rate, ETA) on stderr and a summary at the end.
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "core/error.h"
#include "core/strict_parse.h"
#include "core/sysinfo.h"
#include "model/checkpoint_plan.h"
#include "model/convert/hf_convert.h"
#include "tools/command.h"
#include "tools/util_flags.h"

namespace moex::tools {
namespace {

struct ConvertFlags {
  std::string in, out;
  bool quantize = false, quiet = false, keep_mtp = false;
  std::optional<std::string> bits, group_size, mode, predicate, dtype;
};

// "convert: 41% 1.10 / 2.68 GB  95 MB/s  ETA 17 s": redrawn in place on a terminal (at most
// 5 times a second), one line per tenth otherwise.
class ConvertProgress {
 public:
  explicit ConvertProgress(bool quiet) : quiet_(quiet), tty_(isatty(2)), start_(now_seconds()) {}
  void operator()(uint64_t done, uint64_t total) {
    if (quiet_ || total == 0) return;
    const double now = now_seconds();
    const int tenth = int(10 * done / total);
    if (tty_ ? (now - last_ < 0.2 && done < total) : (tenth == last_tenth_ && done < total)) return;
    last_ = now;
    last_tenth_ = tenth;
    const double secs = now - start_, rate = secs > 0 ? done / secs : 0;
    const double eta = rate > 0 ? (total - done) / rate : 0;
    std::fprintf(stderr, "%sconvert: %3d%% %.2f / %.2f GB  %.0f MB/s  ETA %.0f s%s",
                 tty_ ? "\r" : "", int(100 * done / total), done / 1e9, total / 1e9, rate / 1e6,
                 eta, tty_ ? "   " : "\n");
    if (tty_ && done == total) std::fputc('\n', stderr);
  }
  double seconds() const { return now_seconds() - start_; }

 private:
  bool quiet_, tty_;
  double start_, last_ = 0;
  int last_tenth_ = -1;
};

int run_convert(const ConvertFlags& f) {
  model::convert::ConvertOptions opt;
  opt.in_dir = f.in;
  opt.out_dir = f.out;
  model::convert::Recipe& r = opt.recipe;
  r.quantize = f.quantize;
  if (f.bits) r.bits = int(parse_int_strict(*f.bits, "--q-bits", 1, 8));
  if (f.group_size) r.group_size = int(parse_int_strict(*f.group_size, "--q-group-size", 1, 1024));
  if (f.mode) r.mode = model::convert::parse_q_mode(*f.mode);
  if (f.predicate) r.predicate = *f.predicate;
  if (f.dtype) r.dtype = model::parse_model_dtype(*f.dtype);
  opt.keep_mtp = f.keep_mtp;
  auto progress = std::make_shared<ConvertProgress>(f.quiet);
  opt.progress = [progress](uint64_t d, uint64_t t) { (*progress)(d, t); };
  const model::convert::ConvertSummary s = model::convert::convert_checkpoint(opt);
  if (!f.quiet)
    std::fprintf(stderr,
                 "convert: wrote %s (%s, %lld tensors, %lld modules quantized, %.3f GB in %zu "
                 "shard%s, %zu files copied) in %.1f s\n",
                 f.out.c_str(), s.family.c_str(), (long long)s.tensors,
                 (long long)s.quantized_modules, s.written_bytes / 1e9, s.shards.size(),
                 s.shards.size() == 1 ? "" : "s", s.copied_files.size(), progress->seconds());
  return 0;
}

}  // namespace

MOEX_REGISTER_COMMAND(
    convert, "convert", "convert a Hugging Face checkpoint to MLX format (as mlx_lm convert does)",
    [](CLI::App& sub) -> std::function<int()> {
      auto f = std::make_shared<ConvertFlags>();
      sub.add_option("hf_dir", f->in, "the Hugging Face checkpoint directory")
          ->required()
          ->check(non_empty());
      sub.add_option("--out,--mlx-path", f->out, "the directory to write (must not exist)")
          ->required()
          ->check(non_empty());
      sub.add_flag("-q,--quantize", f->quantize, "quantize (default: affine, 4 bits, group 64)");
      sub.add_option("--q-bits", f->bits, "bits per weight (default: the mode's; affine 4)")
          ->type_name("INT");
      sub.add_option("--q-group-size", f->group_size,
                     "quantization group size (default: the mode's; affine 64)")
          ->type_name("INT");
      sub.add_option("--q-mode", f->mode, "affine|mxfp4|mxfp8|nvfp4 (default affine)")
          ->type_name("MODE");
      sub.add_option("--quant-predicate", f->predicate,
                     "mixed-bit recipe mixed_2_6|mixed_3_4|mixed_3_6|mixed_4_6 (affine)")
          ->type_name("RECIPE");
      sub.add_option("--dtype", f->dtype,
                     "bf16|f16|f32 (also bfloat16|float16|float32) for the unquantized tensors "
                     "(default: config.json's torch_dtype, else as stored)")
          ->type_name("DTYPE");
      sub.add_flag("--keep-mtp", f->keep_mtp,
                   "also write the multi-token-prediction module (GLM-4.5, DeepSeek-V3) that "
                   "mlx_lm convert drops, for `generate --spec mtp` (docs/speculative.md)");
      sub.add_flag("--quiet", f->quiet, "no progress or summary on stderr");
      return [f] { return run_convert(*f); };
    });

}  // namespace moex::tools
