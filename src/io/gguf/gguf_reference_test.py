#!/usr/bin/env python3
"""Reference test: moex's GGUF reader and ggml dequantization against the gguf Python package
(gguf-py, the version pinned in scripts/requirements-reference.txt).

1. Dequantization, bit for bit: for every type moex dequantizes, random blocks (fully random
   bytes, so f16 scales include NaN, inf and subnormals; and blocks with ordinary finite
   scales) are dequantized by gguf.quants.dequantize and by `gguf_ref_tool dequant`; the f32
   outputs must be identical byte for byte, NaN payloads included.
2. Files written by gguf.GGUFWriter (every metadata value type, arrays of each, nested arrays,
   non-ASCII strings, a custom alignment, tensors of float and quantized types) read back by
   `gguf_ref_tool dump`: every key, type, value, tensor shape and byte must match.
3. A model split by GGUFWriter(split_max_tensors=2) into three parts opens from any part as
   one tensor list, and is refused with the missing part named when one is removed.
Prints one line per check; exits 1 on any mismatch.
"""
import argparse
import importlib.metadata
import json
import os
import struct
import subprocess
import sys

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T
from gguf import GGUFValueType as V

# Types moex dequantizes, with the byte ranges of their f16 scale fields (for the blocks
# given ordinary finite scales).
DEQUANT = {
    T.F32: [], T.F16: [], T.BF16: [],
    T.Q4_0: [(0, 2)], T.Q4_1: [(0, 2), (2, 4)], T.Q5_0: [(0, 2)], T.Q5_1: [(0, 2), (2, 4)],
    T.Q8_0: [(0, 2)], T.Q2_K: [(80, 82), (82, 84)], T.Q3_K: [(108, 110)],
    T.Q4_K: [(0, 2), (2, 4)], T.Q5_K: [(0, 2), (2, 4)], T.Q6_K: [(208, 210)],
    T.MXFP4: [], T.IQ4_NL: [(0, 2)], T.IQ4_XS: [(0, 2)],
}
FAILURES = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        FAILURES.append(what)


def run_tool(tool, *args, expect_ok=True):
    r = subprocess.run([tool, *map(str, args)], capture_output=True, text=True)
    if expect_ok and r.returncode != 0:
        raise RuntimeError(f"gguf_ref_tool {' '.join(map(str, args))}: {r.stderr}")
    return r


def random_blocks(qtype, rows, blocks_per_row, rng):
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    data = rng.integers(0, 256, size=(rows, blocks_per_row, size), dtype=np.uint8)
    # Half the rows: ordinary scales (|d| in [2^-14, 2^4], either sign) instead of random bits.
    for lo, hi in DEQUANT[qtype]:
        d = (rng.uniform(2.0 ** -14, 16.0, size=(rows // 2, blocks_per_row)) *
             rng.choice([-1.0, 1.0], size=(rows // 2, blocks_per_row))).astype(np.float16)
        data[: rows // 2, :, lo:hi] = d.view(np.uint8).reshape(rows // 2, blocks_per_row, 2)
    return data.reshape(rows, blocks_per_row * size), rows * blocks_per_row * block


def dequant_check(tool, tmp, rng):
    for qtype in DEQUANT:
        block, _ = gguf.GGML_QUANT_SIZES[qtype]
        blocks_per_row = 4 if block > 1 else 512
        data, n = random_blocks(qtype, 64, blocks_per_row, rng)
        with np.errstate(invalid="ignore", over="ignore"):  # NaN and inf scales are meant
            if qtype == T.F32:
                want = data.view(np.float32)
            elif qtype == T.F16:
                want = data.view(np.float16).astype(np.float32)
            else:
                want = gguf.quants.dequantize(data, qtype)
        src, dst = os.path.join(tmp, "blocks.bin"), os.path.join(tmp, "out.f32")
        data.tofile(src)
        run_tool(tool, "dequant", int(qtype), n, src, dst)
        got = np.fromfile(dst, dtype=np.uint32)
        want_bits = np.ascontiguousarray(want, dtype=np.float32).reshape(-1).view(np.uint32)
        if got.size != want_bits.size:
            check(False, f"dequantize {qtype.name}: moex wrote {got.size} values, expected {want_bits.size}")
            continue
        bad = np.nonzero(got != want_bits)[0]
        nan = int(np.isnan(want).sum())
        what = f"dequantize {qtype.name}: {n} values ({nan} NaN in the reference)"
        if len(bad):
            i = bad[0]
            what += f": {len(bad)} differ, first #{i}: moex {got[i]:08x} gguf-py {want_bits[i]:08x}"
        check(len(bad) == 0, what)


def f32_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def f64_bits(x):
    return struct.unpack("<Q", struct.pack("<d", x))[0]


def expected_value(val, vtype, sub=None):
    """What gguf_ref_tool prints for a value written with this type."""
    if vtype == V.STRING:
        return (val.encode() if isinstance(val, str) else val).hex()
    if vtype == V.FLOAT32:
        return f32_bits(val)
    if vtype == V.FLOAT64:
        return f64_bits(val)
    if vtype == V.BOOL:
        return bool(val)
    if vtype == V.ARRAY:
        if sub is None:
            sub = V.get_type(val[0])
        return [expected_value(v, sub) for v in val]
    return int(val)


def type_text(val, vtype, sub=None):
    if vtype != V.ARRAY:
        return vtype.name.lower()
    sub = sub if sub is not None else V.get_type(val[0])
    return f"array<{type_text(val[0], sub)}>"


KEYS = [  # (key, value, type, array element type)
    ("t.u8", 250, V.UINT8, None), ("t.i8", -100, V.INT8, None),
    ("t.u16", 65535, V.UINT16, None), ("t.i16", -32768, V.INT16, None),
    ("t.u32", 4294967295, V.UINT32, None), ("t.i32", -2147483648, V.INT32, None),
    ("t.f32", 3.14159, V.FLOAT32, None), ("t.f32_tiny", 1e-45, V.FLOAT32, None),
    ("t.u64", 2 ** 64 - 1, V.UINT64, None), ("t.i64", -2 ** 63, V.INT64, None),
    ("t.f64", -2.718281828459045, V.FLOAT64, None),
    ("t.bool_true", True, V.BOOL, None), ("t.bool_false", False, V.BOOL, None),
    ("t.string", "caf\u00e9 \u4f60\u597d \U0001f600 tab\tnewline\n", V.STRING, None),
    ("t.arr_u8", [0, 1, 255], V.ARRAY, V.UINT8), ("t.arr_i8", [-128, 127], V.ARRAY, V.INT8),
    ("t.arr_u16", [1, 65535], V.ARRAY, V.UINT16), ("t.arr_i16", [-1, 2], V.ARRAY, V.INT16),
    ("t.arr_u32", [7, 8, 9], V.ARRAY, V.UINT32), ("t.arr_i32", list(range(-5, 300)), V.ARRAY, V.INT32),
    ("t.arr_f32", [0.5, -1e30, 1e-40], V.ARRAY, V.FLOAT32), ("t.arr_u64", [2 ** 63], V.ARRAY, V.UINT64),
    ("t.arr_i64", [-3, 3], V.ARRAY, V.INT64), ("t.arr_f64", [1e300, -0.0], V.ARRAY, V.FLOAT64),
    ("t.arr_bool", [True, False, True], V.ARRAY, V.BOOL),
    ("t.arr_str", ["<s>", "", "\u0120the", "\u00e9"], V.ARRAY, V.STRING),
    ("t.nested", [[1, 2], [3], [4, 5, 6]], V.ARRAY, None),
]


def tensors(rng):
    """(name, array written, raw_dtype, element shape, type name)."""
    out = [
        ("f32.matrix", rng.standard_normal((3, 8)).astype(np.float32), None, (3, 8), "F32"),
        ("f16.cube", rng.standard_normal((2, 3, 4)).astype(np.float16), None, (2, 3, 4), "F16"),
        ("i32.vector", np.arange(-3, 4, dtype=np.int32), None, (7,), "I32"),
    ]
    for qtype, rows, cols in ((T.BF16, 2, 6), (T.Q8_0, 3, 64), (T.Q4_K, 2, 512), (T.Q6_K, 1, 256),
                              (T.MXFP4, 4, 32), (T.Q5_0, 2, 32)):
        block, size = gguf.GGML_QUANT_SIZES[qtype]
        raw = rng.integers(0, 256, size=(rows, cols // block * size), dtype=np.uint8)
        out.append((f"{qtype.name.lower()}.weight", raw, qtype, (rows, cols), qtype.name))
    return out


def write_model(path, rng, alignment=None, split_max_tensors=0):
    w = gguf.GGUFWriter(path, "testarch", split_max_tensors=split_max_tensors)
    if alignment:
        w.add_custom_alignment(alignment)
    for key, val, vtype, sub in KEYS:
        w.add_key_value(key, val, vtype, sub_type=sub)
    ts = tensors(rng)
    for name, arr, raw, _, _ in ts:
        w.add_tensor(name, arr, raw_dtype=raw)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return ts


def compare_model(dump, ts, what, alignment=32):
    meta = {m["key"]: m for m in dump["metadata"]}
    check(meta.get("general.architecture", {}).get("value") == b"testarch".hex(), f"{what}: general.architecture")
    for key, val, vtype, sub in KEYS:
        m = meta.get(key)
        ok = m is not None and m["value"] == expected_value(val, vtype, sub) and m["type"] == type_text(val, vtype, sub)
        check(ok, f"{what}: key {key} ({type_text(val, vtype, sub)})" + ("" if ok else f": moex read {m}"))
    order = [m["key"] for m in dump["metadata"] if m["key"].startswith("t.")]
    check(order == [k[0] for k in KEYS], f"{what}: keys in file order")
    got = {t["name"]: t for t in dump["tensors"]}
    check(len(got) == len(ts), f"{what}: {len(ts)} tensors (moex read {len(got)})")
    for name, arr, raw, shape, tname in ts:
        t = got.get(name)
        ok = (t is not None and t["type"] == tname and tuple(t["shape"]) == shape and
              t["ne"] == list(reversed(shape)) and t["hex"] == arr.tobytes().hex() and
              t["offset"] % alignment == 0)
        check(ok, f"{what}: tensor {name} {tname} {list(shape)}" + ("" if ok else f": moex read {t and {k: t[k] for k in ('type', 'shape', 'ne', 'offset')}}"))
    for p in dump["parts"]:
        check(p["alignment"] == alignment and p["data_offset"] % alignment == 0 and p["version"] == 3,
              f"{what}: {os.path.basename(p['path'])} version 3, alignment {alignment}, data section aligned")


def file_checks(tool, tmp, rng):
    for alignment in (None, 64):
        path = os.path.join(tmp, f"model-a{alignment or 32}.gguf")
        ts = write_model(path, rng, alignment)
        dump = json.loads(run_tool(tool, "dump", path).stdout)
        compare_model(dump, ts, f"GGUFWriter file (alignment {alignment or 32})", alignment or 32)

    base = os.path.join(tmp, "split.gguf")
    ts = write_model(base, rng, split_max_tensors=4)
    parts = [os.path.join(tmp, f"split-{i:05d}-of-00003.gguf") for i in (1, 2, 3)]
    check(all(os.path.exists(p) for p in parts), "GGUFWriter split the model into 3 parts")
    for given in (parts[0], parts[2]):
        dump = json.loads(run_tool(tool, "dump", given).stdout)
        compare_model(dump, ts, f"split model opened from {os.path.basename(given)}")
        check([p["path"] for p in dump["parts"]] == parts, "parts listed in order")
        check(sorted({t["part"] for t in dump["tensors"]}) == [0, 1, 2], "tensors from all three parts")
    os.rename(parts[1], parts[1] + ".away")
    r = run_tool(tool, "dump", parts[0], expect_ok=False)
    check(r.returncode == 2 and "part 2 of 3" in r.stderr and "cannot open" in r.stderr,
          f"missing part refused: {r.stderr.strip()[:200]}")
    os.rename(parts[1] + ".away", parts[1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--dir", required=True)
    a = ap.parse_args()
    os.makedirs(a.dir, exist_ok=True)
    print(f"gguf-py {importlib.metadata.version('gguf')}, numpy {np.__version__}")
    rng = np.random.default_rng(20261207)
    dequant_check(a.tool, a.dir, rng)
    file_checks(a.tool, a.dir, rng)
    print(f"{len(FAILURES)} failures")
    return 1 if FAILURES else 0


if __name__ == "__main__":
    sys.exit(main())
