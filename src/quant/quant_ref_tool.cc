// quant_ref_tool: file-in/file-out front end of moex's quantizer for the MLX reference test
// (quant_reference_test.py). Raw little-endian arrays, no headers:
//   quant_ref_tool quantize   DTYPE ROWS K BITS GROUP_SIZE INPUT_FILE OUT_PREFIX
//   quant_ref_tool dequantize DTYPE ROWS K BITS GROUP_SIZE IN_PREFIX OUT_PREFIX
// with an optional last argument MODE (affine, mxfp4, mxfp8, nvfp4; default affine). The fp
// modes have U8 scale codes and no .biases file.
// quantize reads [ROWS][K] of DTYPE (f32|f16|bf16) and writes OUT.packed (uint32),
// OUT.scales, OUT.biases (DTYPE) and OUT.deq_f32 / .deq_f16 / .deq_bf16 (the dequantized
// result in each output dtype). dequantize reads IN.packed/.scales/.biases and writes the
// three .deq_* files. Exit code 2 with a message on bad input.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/strict_parse.h"
#include "quant/dequantize.h"
#include "quant/quantize.h"

namespace {

using moex::DType;

DType parse_dtype(const std::string& s) {
  if (s == "f32") return DType::F32;
  if (s == "f16") return DType::F16;
  if (s == "bf16") return DType::BF16;
  moex::fail("DTYPE: \"", s, "\" is not f32, f16 or bf16");
}

std::vector<uint8_t> read_file(const std::string& path, size_t expected) {
  std::ifstream f(path, std::ios::binary);
  if (!f) moex::fail(path, ": cannot open");
  std::vector<uint8_t> data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (data.size() != expected)
    moex::fail(path, ": ", data.size(), " bytes, expected ", expected);
  return data;
}

void write_file(const std::string& path, const void* p, size_t n) {
  std::ofstream f(path, std::ios::binary);
  f.write(static_cast<const char*>(p), std::streamsize(n));
  if (!f) moex::fail(path, ": write failed");
}

void write_dequantized(const moex::quant::QuantMatrixView& v, const std::string& prefix) {
  const struct {
    DType t;
    const char* ext;
  } outs[] = {{DType::F32, ".deq_f32"}, {DType::F16, ".deq_f16"}, {DType::BF16, ".deq_bf16"}};
  for (const auto& o : outs) {
    std::vector<uint8_t> buf(size_t(v.rows * v.k) * moex::dtype_size(o.t));
    moex::quant::dequantize(v, buf.data(), o.t);
    write_file(prefix + o.ext, buf.data(), buf.size());
  }
}

int run(int argc, char** argv) {
  if (argc != 9 && argc != 10) {
    std::cerr << "usage: quant_ref_tool quantize|dequantize DTYPE ROWS K BITS GROUP_SIZE IN OUT"
                 " [MODE]\n";
    return 2;
  }
  const auto qmode = moex::quant::mode_from_name(argc == 10 ? argv[9] : "affine");
  if (!qmode) moex::fail("MODE: \"", argv[9], "\" is not affine, mxfp4, mxfp8 or nvfp4");
  const bool fp = moex::quant::is_fp_mode(*qmode);
  const std::string mode = argv[1];
  const DType dt = parse_dtype(argv[2]);
  const int64_t rows = moex::parse_int_strict(argv[3], "ROWS", 0, int64_t(1) << 24);
  const int64_t k = moex::parse_int_strict(argv[4], "K", 1, int64_t(1) << 24);
  const int bits = int(moex::parse_int_strict(argv[5], "BITS", 0, 64));
  const int gs = int(moex::parse_int_strict(argv[6], "GROUP_SIZE", 1, 1 << 20));
  const std::string in = argv[7], out = argv[8];
  const size_t esz = moex::dtype_size(dt);

  if (mode == "quantize") {
    moex::quant::QuantizeArgs a;
    a.dtype = dt;
    a.rows = rows;
    a.k = k;
    a.bits = bits;
    a.group_size = gs;
    a.mode = *qmode;
    const auto input = read_file(in, size_t(rows * k) * esz);
    a.data = input.data();
    const auto m = moex::quant::quantize(a);
    write_file(out + ".packed", m.packed.data(), m.packed.size() * 4);
    write_file(out + ".scales", m.scales.data(), m.scales.size());
    if (!fp) write_file(out + ".biases", m.biases.data(), m.biases.size());
    write_dequantized(m.view(), out);
    return 0;
  }
  if (mode == "dequantize") {
    moex::quant::QuantMatrixView v;
    v.sb_dtype = fp ? DType::U8 : dt;
    v.mode = *qmode;
    v.k = k;
    v.bits = bits;
    v.group_size = gs;
    moex::quant::check_view(v, "quant_ref_tool");  // parameters only: rows is still 0
    v.rows = rows;
    const size_t n_sb = size_t(rows * (k / gs));
    const auto packed = read_file(in + ".packed", size_t(rows * k * bits / 8));
    const auto scales = read_file(in + ".scales", n_sb * (fp ? 1 : esz));
    const auto biases = fp ? std::vector<uint8_t>() : read_file(in + ".biases", n_sb * esz);
    v.w = packed.data();
    v.scales = scales.data();
    v.biases = fp ? nullptr : biases.data();
    write_dequantized(v, out);
    return 0;
  }
  std::cerr << "quant_ref_tool: unknown mode \"" << mode << "\" (quantize or dequantize)\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const moex::Error& e) {
    std::cerr << "quant_ref_tool: " << e.what() << "\n";
    return 2;
  }
}
