// cuda_bench_tool: command-line driver of cuda_bench.h for scripts/gpu_check.sh (the moex tool
// integrates the same functions). Prints CSV on stdout:
//   cuda_bench_tool bench [--din N] [--dff N] [--top-k N] [--bits N] [--down-bits N]
//                         [--group N] [--act swiglu|geglu|relu2] [--warps N] [--items N]
//                         [--stages N] [--overlap 0|1] [--repeats N] [--pool-mb N]
//                         [--fallback-warps N] [--fallback-items N] [--fallback-stages N]
//                         (--warps .. --overlap: the fused path's RowTiling; --fallback-*:
//                         the fallback's gather_qmm tiling)
//   cuda_bench_tool sweep [same flags; --dff ignored]   (Dff grid 256..16384)
//   cuda_bench_tool copy                                 (device-to-device copy probe)
//   cuda_bench_tool probe [bench flags]                  (per-stage times, plain-read baseline)
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>

#include "core/error.h"
#include "core/strict_parse.h"
#include "backend/cuda/cuda_bench.h"
#include "backend/cuda/device.h"

namespace {

using moex::cuda::BenchMoeOptions;
using moex::cuda::BenchMoeShape;

const char* act_name(moex::kernels::Activation a) {
  switch (a) {
    case moex::kernels::Activation::kSwiGLU: return "swiglu";
    case moex::kernels::Activation::kGeGLU: return "geglu";
    case moex::kernels::Activation::kSquaredReLU: return "relu2";
    case moex::kernels::Activation::kSwiGLUOai: return "swiglu_oai";
  }
  return "?";
}

void parse_flags(int argc, char** argv, BenchMoeShape& s, BenchMoeOptions& o) {
  for (int i = 2; i < argc; ++i) {
    const std::string_view f = argv[i];
    if (i + 1 >= argc) moex::fail("cuda_bench_tool: flag ", f, " needs a value");
    const std::string_view v = argv[++i];
    auto num = [&](int64_t lo, int64_t hi) { return moex::parse_int_strict(v, f, lo, hi); };
    if (f == "--din") s.din = num(32, 1 << 20);
    else if (f == "--dff") s.dff = num(32, 1 << 20);
    else if (f == "--top-k") s.top_k = int(num(1, 256));
    else if (f == "--bits") s.gate_up_bits = s.down_bits = int(num(2, 8));
    else if (f == "--down-bits") s.down_bits = int(num(2, 8));
    else if (f == "--group") s.group_size = int(num(32, 128));
    else if (f == "--warps") o.fused_tiling.warps_per_block = int(num(1, 16));
    else if (f == "--items") o.fused_tiling.items_per_warp = int(num(1, 64));
    else if (f == "--stages") o.fused_tiling.stages = int(num(2, 4));
    else if (f == "--overlap") o.fused_tiling.overlap = num(0, 1) == 1;
    else if (f == "--fallback-warps") o.fallback_tiling.warps_per_block = int(num(1, 16));
    else if (f == "--fallback-items") o.fallback_tiling.items_per_warp = int(num(1, 64));
    else if (f == "--fallback-stages") o.fallback_tiling.stages = int(num(2, 4));
    else if (f == "--repeats") o.repeats = int(num(1, 1000));
    else if (f == "--pool-mb") o.weight_bytes = num(1, 1 << 20) << 20;
    else if (f == "--act") {
      if (v == "swiglu") s.act = moex::kernels::Activation::kSwiGLU;
      else if (v == "geglu") s.act = moex::kernels::Activation::kGeGLU;
      else if (v == "relu2") s.act = moex::kernels::Activation::kSquaredReLU;
      else moex::fail("cuda_bench_tool: --act ", v, "; expected swiglu, geglu or relu2");
    } else {
      moex::fail("cuda_bench_tool: unknown flag ", f);
    }
  }
}

void print_header() {
  std::printf("device,kind,din,dff,top_k,gate_up_bits,down_bits,group,act,warps,items,stages,layers,"
              "bytes_per_layer,fused_us,fused_min_us,fused_max_us,fallback_us,fallback_min_us,"
              "fallback_max_us,fused_gbps,fallback_gbps,copy_gbps,fused_frac_copy,"
              "fallback_frac_copy,ratio_fallback_over_fused,fused_kernel,overlap,fallback_warps,fallback_items,"
              "fallback_stages\n");
}

void print_row(const moex::cuda::BenchMoeResult& r, const BenchMoeOptions& o, const char* kind) {
  const BenchMoeShape& s = r.shape;
  std::printf("\"%s\",%s,%lld,%lld,%d,%d,%d,%d,%s,%d,%d,%d,%lld,%lld,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,"
              "%.1f,%.1f,%.1f,%.4f,%.4f,%.4f,%s,%d,%d,%d,%d\n",
              r.device.c_str(), kind, (long long)s.din, (long long)s.dff, s.top_k,
              s.gate_up_bits, s.down_bits, s.group_size, act_name(s.act),
              o.fused_tiling.warps_per_block, o.fused_tiling.items_per_warp,
              o.fused_tiling.stages, (long long)r.layers,
              (long long)r.weight_bytes_per_layer, r.fused.median_us, r.fused.min_us,
              r.fused.max_us, r.fallback.median_us, r.fallback.min_us, r.fallback.max_us,
              r.fused_gbps, r.fallback_gbps, r.copy_gbps, r.fused_fraction_of_copy,
              r.fallback_fraction_of_copy, r.ratio, r.fused_name.c_str(),
              int(o.fused_tiling.overlap), o.fallback_tiling.warps_per_block,
              o.fallback_tiling.items_per_warp, o.fallback_tiling.stages);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc < 2) moex::fail("usage: cuda_bench_tool bench|sweep|copy [flags]");
    const std::string_view cmd = argv[1];
    if (!moex::cuda::device_available()) {
      std::fprintf(stderr, "cuda_bench_tool: skipped: no CUDA device (%s)\n",
                   moex::cuda::device_unavailable_reason().c_str());
      return 3;
    }
    BenchMoeShape s;
    BenchMoeOptions o;
    parse_flags(argc, argv, s, o);
    if (cmd == "copy") {
      std::printf("device,copy_gbps_read_plus_write\n\"%s\",%.1f\n",
                  moex::cuda::device_name().c_str(),
                  moex::cuda::measure_copy_bandwidth_gbps(int64_t{1} << 30, o.repeats));
    } else if (cmd == "probe") {
      const moex::cuda::BenchProbeResult r = moex::cuda::probe_moe(s, o);
      std::printf("din,dff,top_k,bits,down_bits,act,warps,items,pool_mb,layers,bytes_per_layer,empty_us,"
                  "stage_a_us,stage_b_us,fused_us,fallback_us,read_layer_us,read_layer_wave_us,read_all_us,"
                  "fused_gbps,read_layer_gbps,read_all_gbps\n");
      std::printf("%lld,%lld,%d,%d,%d,%s,%d,%d,%lld,%lld,%lld,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,"
                  "%.3f,%.1f,%.1f,%.1f\n",
                  (long long)s.din, (long long)s.dff, s.top_k, s.gate_up_bits, s.down_bits,
                  act_name(s.act), o.fused_tiling.warps_per_block, o.fused_tiling.items_per_warp,
                  (long long)(o.weight_bytes >> 20), (long long)r.layers, (long long)r.weight_bytes_per_layer, r.empty_us,
                  r.stage_a_us, r.stage_b_us, r.fused_us, r.fallback_us, r.read_layer_us,
                  r.read_layer_wave_us, r.read_all_us, r.fused_gbps, r.read_layer_gbps, r.read_all_gbps);
    } else if (cmd == "bench") {
      print_header();
      print_row(moex::cuda::bench_moe(s, o), o, "bench");
    } else if (cmd == "sweep") {
      print_header();
      const double copy = moex::cuda::measure_copy_bandwidth_gbps(int64_t{1} << 30, o.repeats);
      o.measure_copy = false;
      for (int64_t dff : moex::cuda::default_dff_grid()) {
        if (dff % s.group_size) continue;
        BenchMoeShape p = s;
        p.dff = dff;
        moex::cuda::BenchMoeResult r = moex::cuda::bench_moe(p, o);
        r.copy_gbps = copy;
        r.fused_fraction_of_copy = r.fused_gbps / copy;
        r.fallback_fraction_of_copy = r.fallback_gbps / copy;
        print_row(r, o, "sweep");
      }
    } else {
      moex::fail("cuda_bench_tool: unknown command ", cmd, "; expected bench, sweep, probe or copy");
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cuda_bench_tool: %s\n", e.what());
    return 2;
  }
}
