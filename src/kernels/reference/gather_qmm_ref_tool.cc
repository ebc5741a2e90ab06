// Runs moex's gather_qmm on tensors from a safetensors file written by MLX and writes the
// result, for the live reference test against mx.gather_qmm (gather_qmm_reference_test.py).
// Input tensors: x [M][K] f32, w [E][N][K*bits/32] u32, scales/biases [E][N][K/gs],
// lhs [B] i32, rhs [B] i32; metadata bits, group_size, isa and optionally mode (affine,
// mxfp4, mxfp8, nvfp4; the fp modes have U8 scales and no biases). Output: out [B][N] f32.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/isa.h"
#include "core/strict_parse.h"
#include "io/safetensors.h"
#include "io/safetensors_writer.h"
#include "kernels/moe_kernels.h"
#include "kernels/qdot.h"
#include "quant/format.h"

int main(int argc, char** argv) {
  using namespace moex;
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s IN.safetensors OUT.safetensors\n", argv[0]);
    return 2;
  }
  try {
    auto f = io::SafetensorsFile::open(argv[1]);
    auto need = [&](const char* n) -> const io::TensorInfo& {
      const io::TensorInfo* t = f->find(n);
      if (!t) fail(argv[1], ": missing tensor ", n);
      return *t;
    };
    const auto& meta = f->metadata();
    const int bits = int(parse_int_strict(meta.at("bits").get<std::string>(), "metadata bits", 1, 8));
    const int gs = int(parse_int_strict(meta.at("group_size").get<std::string>(), "metadata group_size", 1, 1 << 20));
    set_active_isa(parse_isa(meta.at("isa").get<std::string>(), "metadata isa"));
    const std::string mode_name = meta.contains("mode") ? meta.at("mode").get<std::string>() : "affine";
    const auto mode = quant::mode_from_name(mode_name);
    if (!mode) fail(argv[1], ": metadata mode '", mode_name, "' is not a quantization mode");
    const auto &x = need("x"), &w = need("w"), &s = need("scales");
    const io::TensorInfo* b = quant::is_fp_mode(*mode) ? nullptr : &need("biases");
    const auto &lhs = need("lhs"), &rhs = need("rhs");
    kernels::QuantWeightsView v;
    v.w = w.data;
    v.scales = s.data;
    v.biases = b ? b->data : nullptr;
    v.sb_dtype = s.dtype;
    v.mode = *mode;
    v.experts = w.shape[0];
    v.n = w.shape[1];
    v.k = w.shape[2] * 32 / bits;
    v.bits = bits;
    v.group_size = gs;
    if (const char* why = kernels::qdot_unsupported_reason(v)) fail(argv[1], ": ", why);
    const int64_t batch = lhs.shape[0];
    std::vector<float> out(size_t(batch * v.n));
    kernels::GatherQmmArgs a;
    a.x = reinterpret_cast<const float*>(x.data);
    a.x_rows = x.shape[0];
    a.w = &v;
    a.lhs_indices = reinterpret_cast<const int32_t*>(lhs.data);
    a.rhs_indices = reinterpret_cast<const int32_t*>(rhs.data);
    a.batch = batch;
    a.out = out.data();
    kernels::gather_qmm(a);
    io::SafetensorsWriter wr(argv[2]);
    wr.declare({"out", DType::F32, {batch, v.n}});
    wr.write("out", out.data(), out.size() * sizeof(float));
    wr.finish();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gather_qmm_ref_tool: %s\n", e.what());
    return 2;
  }
  return 0;
}
