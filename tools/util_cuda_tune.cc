// `moex tune --backend cuda`: cuda::sweep_dff over the Dff grid for every preset shape and bit
// width, the host cap by moe::derive_host_cap_with_ties, and the calibration entry (backend
// cuda, hardware = the device name) merged into the calibration file. Stub without CUDA.
#include "tools/util_cuda_tune.h"

#include <algorithm>
#include <cstdio>

#include "core/error.h"
#include "core/sysinfo.h"
#include "moe/calibration.h"
#include "moe/dispatch_policy.h"
#include "moe/moe_tune.h"
#include "tools/util_cuda_bench.h"

#ifdef MOEX_HAVE_CUDA
#include "backend/cuda/cuda_bench.h"
#include "backend/cuda/device.h"
#endif

namespace moex::tools {

#ifndef MOEX_HAVE_CUDA

std::vector<int64_t> cuda_default_dff_grid() {
  require_cuda_device("tune");
  return {};
}

int run_tune_cuda(const CudaTuneArgs&) {
  require_cuda_device("tune");
  return 2;
}

#else

std::vector<int64_t> cuda_default_dff_grid() { return cuda::default_dff_grid(); }

int run_tune_cuda(const CudaTuneArgs& a) {
  require_cuda_device("tune");
  moe::check_calibration_writable(a.path);  // before the long run, not after
  const cuda::DeviceInfo dev = cuda::device_info();
  cuda::BenchMoeOptions opt;
  opt.repeats = a.repeats;
  opt.measure_copy = false;
  const size_t total = a.bits.size() * a.shapes.size() * a.dffs.size();
  std::fprintf(stderr, "tune: %s: %zu shapes x %zu Dff points, %d replays per path\n",
               dev.name.c_str(), a.bits.size() * a.shapes.size(), a.dffs.size(), a.repeats);

  const double t0 = now_seconds();
  std::vector<moe::TunePoint> measured;
  for (int b : a.bits) {
    for (const auto& [key, names] : a.shapes) {
      cuda::BenchMoeShape base;
      base.din = key.first;
      base.top_k = int(key.second);
      base.gate_up_bits = base.down_bits = b;
      base.group_size = a.group_size;
      base.act = kernels::Activation::kSwiGLU;
      const cuda::DffSweepResult s = cuda::sweep_dff(base, a.dffs, opt);
      for (const cuda::DffSweepPoint& p : s.points) {
        moe::TunePoint tp;
        tp.point = {key.first, p.dff, key.second, b, p.fused_us, p.fallback_us, p.ratio};
        tp.fused_spread = p.fused_spread;
        tp.fallback_spread = p.fallback_spread;
        measured.push_back(tp);
        std::fprintf(stderr,
                     "tune: [%zu/%zu] hidden %lld top_k %lld %d-bit Dff %lld: fused %.2f us, "
                     "fallback %.2f us, ratio %.3f (spread %.1f%%)\n",
                     measured.size(), total, (long long)key.first, (long long)key.second, b,
                     (long long)p.dff, p.fused_us, p.fallback_us, p.ratio,
                     100 * std::max(p.fused_spread, p.fallback_spread));
      }
    }
  }
  const double copy_gbps = cuda::measure_copy_bandwidth_gbps(opt.copy_bytes, a.repeats);
  const double seconds = now_seconds() - t0;
  const moe::HostCap cap = moe::derive_host_cap_with_ties(measured);

  moe::TuneHost host;
  host.backend = "cuda";
  host.hardware = dev.name;
  host.threads = 1;
  host.isa = str_cat("sm_", dev.cc_major, dev.cc_minor);
  host.precision = "f32";
  host.moex_commit = moex_commit();
  host.date = utc_date_time();

  Report rep;
  rep.title = "moex tune (cuda)";
  rep.header = {
      {"moex_commit", text_cell(host.moex_commit)},
      {"date", text_cell(host.date)},
      {"gpu", text_cell(host.hardware)},
      {"backend", text_cell(host.backend)},
      {"arch", text_cell(host.isa)},
      {"sm_count", integer_cell(dev.sm_count)},
      {"dff_grid", text_cell(join_ints(a.dffs))},
      {"group_size", integer_cell(a.group_size)},
      {"experts_per_layer",
       text_cell("top_k distinct experts per layer, layers cycled over a >= 1 GiB pool")},
      {"l2_mb", number_cell(dev.l2_bytes / 1e6, 0)},
      {"copy_bw_gbps", number_cell(copy_gbps, 1)},
      {"repeats", integer_cell(a.repeats)},
      {"seconds", number_cell(seconds, 1)},
      {"cap", integer_cell(cap.cap)},
      {"calibration_file", text_cell(a.path)},
  };
  add_tune_results(rep, measured, cap, a.shapes);
  rep.notes.push_back(str_cat("the dispatch policy uses this cap for backend cuda on '",
                              host.hardware, "' unless --max-dff or ", moe::kEnvFusedMoeMaxDff,
                              " is given (default without calibration: ",
                              moe::kCudaDefaultMaxDff, ")"));
  if (!a.path_is_default) {
    const std::string def = moe::default_calibration_path();
    if (def != a.path)
      rep.notes.push_back(str_cat("the policy reads ", def.empty() ? "no default path" : def,
                                  "; set ", moe::kEnvCalibration, "=", a.path,
                                  " to use this file"));
  }
  return finish_tune(rep, a.format, a.path,
                     moe::make_tune_entry(host, cap, moe::calibration_points(measured)));
}

#endif  // MOEX_HAVE_CUDA

}  // namespace moex::tools
