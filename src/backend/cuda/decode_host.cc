// Host side of the CUDA MoE operations: argument checks, launch shapes, the decode
// workspace, and the two decode paths composed from the kernels of kernel_launch.h.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>

#include "core/error.h"
#include "backend/cuda/cuda_check.h"
#include "backend/cuda/gather_qmm.h"
#include "backend/cuda/kernel_launch.h"
#include "backend/cuda/moe_decode.h"

namespace moex::cuda {
namespace {

using kernels::Activation;

constexpr int64_t kUnitStrideBytes = 36 * 4;  // per 32 staged elements (quant_dot.cuh)

size_t staged_bytes(int64_t len) { return size_t(len / 32 * kUnitStrideBytes); }

int act_kind(Activation a) {
  switch (a) {
    case Activation::kSwiGLU: return 0;
    case Activation::kGeGLU: return 1;
    case Activation::kSquaredReLU: return 2;
    case Activation::kSwiGLUOai: break;  // refused at upload (DeviceMoeLayer::upload)
  }
  return 0;
}

const char* act_tag(Activation a) {
  switch (a) {
    case Activation::kSwiGLU: return "swiglu";
    case Activation::kGeGLU: return "geglu";
    case Activation::kSquaredReLU: return "relu2";
    case Activation::kSwiGLUOai: return "swiglu_oai";
  }
  return "?";
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The staged vectors are read with 16-byte loads.
void check_aligned(const void* p, const char* what, const char* field) {
  if (reinterpret_cast<uintptr_t>(p) % 16 != 0)
    fail(what, ": ", field, " must be 16-byte aligned (device allocations are)");
}

// Launch shape of a row kernel whose blocks stage a vector of `len` in shared memory (the
// weights go to registers, warp_rows.cuh). *stages is the tiling's look-ahead.
detail::LaunchShape row_launch(int64_t blocks_x, int64_t blocks_y, const RowTiling& t,
                               int64_t len, cudaStream_t stream, const char* what,
                               int* stages) {
  if (blocks_x < 1 || blocks_y < 1 || blocks_x > 0x7fffffff || blocks_y > 65535)
    fail(what, ": launch grid ", blocks_x, " x ", blocks_y, " is out of CUDA's range");
  *stages = t.stages;
  detail::LaunchShape s;
  s.grid = dim3(unsigned(blocks_x), unsigned(blocks_y));
  s.block = dim3(unsigned(t.warps_per_block * 32));
  s.smem = staged_bytes(len);
  s.stream = stream;
  return s;
}

void check_decode_args(const DeviceMoeLayer& layer, const DecodeArgs& a,
                       const DecodeWorkspace& ws, const char* what) {
  if (!layer.up().w) fail(what, ": the layer holds no weights");
  if (!a.x || !a.expert_ids || !a.scores || !a.out)
    fail(what, ": x, expert_ids, scores and out must be device pointers, not null");
  if (a.top_k < 1 || a.top_k > ws.max_top_k())
    fail(what, ": top_k = ", a.top_k, "; the workspace holds 1..", ws.max_top_k());
  check_aligned(a.x, what, "x");
  if (ws.din() != layer.din() || ws.dff() != layer.dff())
    fail(what, ": workspace sized for Din ", ws.din(), ", Dff ", ws.dff(),
         "; the layer has Din ", layer.din(), ", Dff ", layer.dff());
}

}  // namespace

// ---- separate operations -----------------------------------------------------------------

void gather_qmm(const DeviceGatherQmmArgs& a, const RowTiling& tiling) {
  const char* what = "cuda::gather_qmm";
  check_tiling(tiling, what);
  if (!a.w || !a.w->w) fail(what, ": no weights");
  if (!a.x || !a.rhs_indices || !a.out) fail(what, ": x, rhs_indices and out must not be null");
  if (a.batch < 0 || a.x_rows < 1) fail(what, ": batch = ", a.batch, ", x_rows = ", a.x_rows);
  if (a.batch == 0) return;
  check_aligned(a.x, what, "x");
  detail::GatherParams p;
  p.w = *a.w;
  p.x = a.x;
  p.x_rows = a.x_rows;
  p.lhs = a.lhs_indices;
  p.rhs = a.rhs_indices;
  p.out = a.out;
  p.items = int(ceil_div(a.w->n, 2));
  p.items_per_warp = tiling.items_per_warp;
  const detail::LaunchShape shape =
      row_launch(a.batch, ceil_div(p.items, tiling.rows_per_block()), tiling, a.w->k, a.stream,
                 what, &p.stages);
  detail::launch_gather_qmm(p, shape);
}

void apply_activation(const ActivationArgs& a) {
  if (!a.up || !a.out || (a.act != Activation::kSquaredReLU && !a.gate))
    fail("cuda::apply_activation: gate (unless squared ReLU), up and out must not be null");
  detail::launch_activation(a.gate, a.up, a.out, a.count, act_kind(a.act), a.stream);
}

void weighted_sum(const WeightedSumArgs& a) {
  if (!a.y || !a.scores || !a.out || a.top_k < 1)
    fail("cuda::weighted_sum: y, scores and out must not be null and top_k >= 1");
  detail::launch_weighted_sum(a.y, a.scores, a.tokens, a.top_k, a.din, a.out, a.stream);
}

// ---- decode paths ------------------------------------------------------------------------

DecodeWorkspace::DecodeWorkspace(const DeviceMoeLayer& layer, int max_top_k)
    : max_top_k_(max_top_k), din_(layer.din()), dff_(layer.dff()) {
  if (max_top_k < 1 || max_top_k > 65535)
    fail("cuda::DecodeWorkspace: max_top_k = ", max_top_k, "; expected 1..65535");
  const size_t k = size_t(max_top_k);
  act_ = DeviceBuffer(k * size_t(dff_) * 4);
  partials_ = DeviceBuffer(k * size_t(din_) * 4);
  gate_out_ = DeviceBuffer(k * size_t(dff_) * 4);
  up_out_ = DeviceBuffer(k * size_t(dff_) * 4);
  down_out_ = DeviceBuffer(k * size_t(din_) * 4);
  // Stage B has at most one block per item (din/2 items): one counter each, all zero.
  counters_ = DeviceBuffer(size_t(din_ / 2 + 1) * 4);
  counters_.fill_bytes(0);
}

void fused_decode(const DeviceMoeLayer& layer, const DecodeArgs& a, DecodeWorkspace& ws,
                  const RowTiling& tiling) {
  detail::fused_decode_stages(layer, a, ws, tiling, true, true);
}

void detail::fused_decode_stages(const DeviceMoeLayer& layer, const DecodeArgs& a,
                                 DecodeWorkspace& ws, const RowTiling& tiling, bool stage_a,
                                 bool stage_b) {
  const char* what = "cuda::fused_decode";
  check_tiling(tiling, what);
  check_decode_args(layer, a, ws, what);
  const int64_t din = layer.din(), dff = layer.dff();
  const int rpb = tiling.rows_per_block();

  detail::StageAParams pa;
  pa.gate = layer.gate();
  pa.up = layer.up();
  pa.x = a.x;
  pa.ids = a.expert_ids;
  pa.act = ws.act();
  pa.din = int(din);
  pa.dff = int(dff);
  pa.act_kind = act_kind(layer.act());
  pa.items = int(pa.act_kind == 2 ? dff / 2 : dff);
  pa.items_per_warp = tiling.items_per_warp;
  if (pa.act_kind == 2) pa.gate = pa.up;  // unused; keeps the bits dispatch trivial
  const detail::LaunchShape shape_a =
      row_launch(ceil_div(pa.items, rpb), a.top_k, tiling, din, a.stream, what, &pa.stages);
  if (stage_a) detail::launch_stage_a(pa, shape_a);

  detail::StageBParams pb;
  pb.down = layer.down();
  pb.act = ws.act();
  pb.ids = a.expert_ids;
  pb.scores = a.scores;
  pb.partials = ws.partials();
  pb.out = a.out;
  pb.counters = ws.counters();
  pb.din = int(din);
  pb.dff = int(dff);
  pb.items = int(din / 2);
  pb.items_per_warp = tiling.items_per_warp;
  const int64_t blocks_b = ceil_div(pb.items, rpb);
  if (blocks_b > ws.num_counters()) fail(what, ": workspace has too few stage-B counters");
  detail::LaunchShape shape_b =
      row_launch(blocks_b, a.top_k, tiling, dff, a.stream, what, &pb.stages);
  // Overlap only behind stage A: alone (probe), stage B waits for whatever ran before it.
  shape_b.programmatic = tiling.overlap && stage_a;
  if (stage_b) detail::launch_stage_b(pb, shape_b);
}

void fallback_decode(const DeviceMoeLayer& layer, const DecodeArgs& a, DecodeWorkspace& ws,
                     const RowTiling& tiling) {
  const char* what = "cuda::fallback_decode";
  check_tiling(tiling, what);
  check_decode_args(layer, a, ws, what);
  const int rpb = tiling.rows_per_block();
  const int64_t din = layer.din(), dff = layer.dff(), k = a.top_k;

  // gate and up: every k reads the token's one x row.
  detail::GatherParams p;
  p.x = a.x;
  p.x_rows = 1;
  p.x_broadcast = true;
  p.rhs = a.expert_ids;
  p.items_per_warp = tiling.items_per_warp;
  p.items = int(dff / 2);
  const bool gated = layer.act() != Activation::kSquaredReLU;
  if (gated) {
    p.w = layer.gate();
    p.out = ws.gate_out();
    detail::launch_gather_qmm(p, row_launch(k, ceil_div(p.items, rpb), tiling, din, a.stream,
                                            what, &p.stages));
  }
  p.w = layer.up();
  p.out = ws.up_out();
  detail::launch_gather_qmm(p, row_launch(k, ceil_div(p.items, rpb), tiling, din, a.stream,
                                          what, &p.stages));

  detail::launch_activation(gated ? ws.gate_out() : nullptr, ws.up_out(), ws.act(), k * dff,
                            act_kind(layer.act()), a.stream);

  // down: row k of act against expert ids[k].
  p.w = layer.down();
  p.x = ws.act();
  p.x_rows = k;
  p.x_broadcast = false;
  p.lhs = nullptr;
  p.out = ws.down_out();
  p.items = int(din / 2);
  detail::launch_gather_qmm(p, row_launch(k, ceil_div(p.items, rpb), tiling, dff, a.stream,
                                          what, &p.stages));

  detail::launch_weighted_sum(ws.down_out(), a.scores, 1, a.top_k, din, a.out, a.stream);
}

std::string fused_kernel_name(const DeviceMoeLayer& l) {
  return str_cat("moe_decode_fused_gu", l.up().bits, "_d", l.down().bits, "_g",
                 l.up().group_size, "_", act_tag(l.act()), "__cuda");
}
std::string fallback_kernel_name(const DeviceMoeLayer& l) {
  return str_cat("moe_decode_fallback_gu", l.up().bits, "_d", l.down().bits, "_g",
                 l.up().group_size, "_", act_tag(l.act()), "__cuda");
}

}  // namespace moex::cuda
