// `moex bench-moe --backend cuda`: cuda::bench_moe (graph replays of many layers over a weight
// pool larger than L2) as the same report as the CPU path, with the device-to-device copy
// probe of the same run as the bandwidth reference. Stubs when CUDA is not built in.
#include "tools/util_cuda_bench.h"

#include <cstdio>
#include <vector>

#include "core/error.h"
#include "core/sysinfo.h"

#ifdef MOEX_HAVE_CUDA
#include "backend/cuda/cuda_bench.h"
#include "backend/cuda/device.h"
#endif

namespace moex::tools {

#ifndef MOEX_HAVE_CUDA

bool cuda_built_in() { return false; }

void require_cuda_device(const std::string& command) {
  fail(command, ": --backend cuda: ", kBuiltWithoutCuda);
}

int run_bench_moe_cuda(const CudaBenchMoeArgs&) {
  require_cuda_device("bench-moe");
  return 2;
}

#else

bool cuda_built_in() { return true; }

void require_cuda_device(const std::string& command) {
  const std::string why = cuda::device_unavailable_reason();
  if (!why.empty())
    fail(command, ": --backend cuda: no CUDA device found (", why,
         "); run on a machine with an NVIDIA GPU and its driver, or use --backend cpu");
}

int run_bench_moe_cuda(const CudaBenchMoeArgs& a) {
  require_cuda_device("bench-moe");
  cuda::BenchMoeShape shape;
  shape.din = a.shape.hidden;
  shape.dff = a.shape.dff;
  shape.top_k = int(a.shape.top_k);
  shape.gate_up_bits = a.shape.bits;
  shape.down_bits = a.shape.down_bits;
  shape.group_size = a.shape.group_size;
  shape.act = a.shape.act;
  cuda::BenchMoeOptions opt;
  opt.repeats = a.repeats;
  const cuda::DeviceInfo dev = cuda::device_info();
  std::fprintf(stderr, "bench-moe: %s: timing fused and fallback (%d replays each) ...\n",
               dev.name.c_str(), opt.repeats);
  const cuda::BenchMoeResult r = cuda::bench_moe(shape, opt);
  const int64_t pool = r.experts_allocated * (r.weight_bytes_per_layer / a.shape.top_k);

  auto row = [&](const char* name, const cuda::BenchStat& s, double gbps, double frac,
                 double ratio) {
    return std::vector<ReportCell>{text_cell(name),          number_cell(s.median_us, 2),
                                   number_cell(s.min_us, 2), number_cell(s.max_us, 2),
                                   number_cell(gbps, 1),     number_cell(frac, 3),
                                   number_cell(ratio, 3)};
  };
  Report rep;
  rep.title = str_cat("moex bench-moe ", a.label, " (cuda)");
  rep.header = {
      {"moex_commit", text_cell(moex_commit())},
      {"date", text_cell(utc_date_time())},
      {"gpu", text_cell(r.device)},
      {"backend", text_cell("cuda")},
      {"compute_capability", text_cell(str_cat(dev.cc_major, ".", dev.cc_minor))},
      {"sm_count", integer_cell(dev.sm_count)},
      {"hidden", integer_cell(a.shape.hidden)},
      {"dff", integer_cell(a.shape.dff)},
      {"experts", integer_cell(a.shape.experts)},
      {"top_k", integer_cell(a.shape.top_k)},
      {"bits", integer_cell(a.shape.bits)},
      {"down_bits", integer_cell(a.shape.down_bits)},
      {"group_size", integer_cell(a.shape.group_size)},
      {"scales_biases", text_cell("bf16")},
      {"activation", text_cell(kernels::activation_name(a.shape.act))},
      {"fused_kernel", text_cell(r.fused_name)},
      {"fallback_kernel", text_cell(r.fallback_name)},
      {"layers_cycled", integer_cell(r.layers)},
      {"experts_allocated", integer_cell(r.experts_allocated)},
      {"weight_pool_gb", number_cell(pool / 1e9, 2)},
      {"l2_mb", number_cell(dev.l2_bytes / 1e6, 0)},
      {"bytes_per_layer_call_mb", number_cell(r.weight_bytes_per_layer / 1e6, 3)},
      {"copy_bw_gbps", number_cell(r.copy_gbps, 1)},
      {"copy_bw_method",
       text_cell(str_cat("cudaMemcpyAsync device to device, ", opt.copy_bytes / 1e9,
                         " GB, (read + write) / time, median of ", opt.repeats))},
      {"repeats", integer_cell(opt.repeats)},
      {"warmup", integer_cell(opt.warmup)},
  };
  rep.columns = {"path",        "us_per_layer_median", "us_min",
                 "us_max",      "weight_gbps",         "fraction_of_copy_bw",
                 "speedup_vs_fallback"};
  rep.rows.push_back(
      row("fused", r.fused, r.fused_gbps, r.fused_fraction_of_copy, r.ratio));
  rep.rows.push_back(
      row("fallback", r.fallback, r.fallback_gbps, r.fallback_fraction_of_copy, 1.0));
  rep.notes.push_back(
      "speedup_vs_fallback = fallback median / fused median (> 1: fused faster)");
  rep.notes.push_back(str_cat(
      "per layer = one replay of a CUDA graph of ", r.layers,
      " layers / layers; each layer reads top_k distinct experts of the pool, so no layer finds "
      "its weights in L2; the model's expert count does not change the bytes read per layer"));
  rep.notes.push_back(
      str_cat("weight bytes per call = top_k x (gate+up+down packed + bf16 scales + biases) = ",
              a.shape.top_k, " x ", r.weight_bytes_per_layer / a.shape.top_k, " B"));
  rep.notes.push_back(
      "fraction_of_copy_bw = weight_gbps / copy_bw_gbps (the copy counts bytes read + written)");
  if (!a.note.empty()) rep.notes.push_back(a.note);
  std::fputs(render_report(rep, a.format).c_str(), stdout);
  return 0;
}

#endif  // MOEX_HAVE_CUDA

}  // namespace moex::tools
