# Reference check for safetensors I/O. (1) Runs `io_reference_tool write`, loads its files with
# mlx.core.load (files without F64/F8_E5M2, which mx.load cannot read) and with a small
# independent numpy parser (every file) and compares every element with values recomputed here from the same formula.
# (2) Writes a file with mx.save_safetensors and checks `io_reference_tool read` sees the same
# names, dtypes, shapes, metadata and bytes. Usage: mlx_load_check.py PATH/TO/io_reference_tool OUT_DIR
import json
import math
import os
import shutil
import struct
import subprocess
import sys

import mlx.core as mx
import numpy as np

M64 = (1 << 64) - 1
WIDTH = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1,
         "U64": 8, "U32": 4, "U16": 2, "U8": 1, "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1}
FLOATS = {"F64", "F32", "F16", "BF16"}
MLX_UNSUPPORTED = {"F64", "F8_E5M2"}  # mx.load: "[safetensor] unsupported dtype"
UINT = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
MX_UINT = {1: mx.uint8, 2: mx.uint16, 4: mx.uint32, 8: mx.uint64}


def mix(i, seed):
    x = ((i + 1) * 0x9E3779B97F4A7C15 + seed * 0xBF58476D1CE4E5B9) & M64
    x ^= x >> 31
    x = (x * 0x94D049BB133111EB) & M64
    x ^= x >> 29
    return x


def float_value(i, seed, dtype):
    if i < 4:
        return [math.inf, -math.inf, -0.0, math.nan][i]
    x = mix(i, seed)
    if dtype == "BF16":
        return ((x >> 40) % 255 - 127) / 4.0
    return ((x >> 40) % 4001 - 2000) / 16.0


def expected(t):
    """(float64 values or None, unsigned bit patterns or None) for a manifest entry."""
    n = math.prod(t["shape"])
    dt, seed = t["dtype"], t["seed"]
    if dt in FLOATS:
        return np.array([float_value(i, seed, dt) for i in range(n)], dtype=np.float64), None
    if dt == "BOOL":
        return None, np.array([mix(i, seed) & 1 for i in range(n)], dtype=np.uint8)
    mask = (1 << (8 * WIDTH[dt])) - 1
    return None, np.array([mix(i, seed) & mask for i in range(n)], dtype=UINT[WIDTH[dt]])


def compare(where, t, values, bits):
    want_v, want_b = expected(t)
    if want_v is not None:
        got = np.asarray(values, dtype=np.float64).reshape(-1)
        ok = got.shape == want_v.shape and np.array_equal(got, want_v, equal_nan=True)
        ok = ok and np.array_equal(np.signbit(got), np.signbit(want_v))
    else:
        got = np.asarray(bits).reshape(-1)
        ok = got.shape == want_b.shape and np.array_equal(got.astype(want_b.dtype), want_b)
    if not ok:
        raise SystemExit(f"FAIL {where}: tensor {t['name']} ({t['dtype']}) values differ")


def numpy_load(path):
    """Independent minimal safetensors parser: name -> (dtype, shape, raw bytes)."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    data = blob[8 + n:]
    out, end = {}, 0
    for name, e in sorted(((k, v) for k, v in header.items() if k != "__metadata__"),
                          key=lambda kv: tuple(kv[1]["data_offsets"])):
        b, en = e["data_offsets"]
        if b != end:  # the Rust safetensors reader also requires contiguous ranges
            raise SystemExit(f"FAIL {path}: gap or overlap before {name}")
        end = en
        out[name] = (e["dtype"], e["shape"], data[b:en])
    if end != len(data):
        raise SystemExit(f"FAIL {path}: {len(data) - end} trailing bytes after the last tensor")
    if n % 8 != 0:
        raise SystemExit(f"FAIL {path}: header length {n} is not a multiple of 8")
    return out, header.get("__metadata__", {})


MX_NAME = {mx.float32: "F32", mx.float16: "F16", mx.bfloat16: "BF16", mx.int64: "I64",
           mx.int32: "I32", mx.int16: "I16", mx.int8: "I8", mx.uint64: "U64", mx.uint32: "U32",
           mx.uint16: "U16", mx.uint8: "U8", mx.bool_: "BOOL"}


def fnv1a64(b):
    h = 0xCBF29CE484222325
    for byte in b:
        h = ((h ^ byte) * 0x100000001B3) & M64
    return h


def check_mlx_written(tool, out):
    """mx.save_safetensors -> our reader: same names, dtypes, shapes, metadata and bytes."""
    key = mx.random.key(7)
    w, scales, biases = mx.quantize(mx.random.normal((16, 128), key=key), group_size=64, bits=4)
    arrays = {
        "model.layers.0.mlp.switch_mlp.up_proj.weight": w,
        "model.layers.0.mlp.switch_mlp.up_proj.scales": scales.astype(mx.bfloat16),
        "model.layers.0.mlp.switch_mlp.up_proj.biases": biases.astype(mx.bfloat16),
        "f32": mx.random.normal((2, 3, 5), key=key),
        "f16": mx.random.normal((7,), key=key).astype(mx.float16),
        "i64": mx.array([-(2 ** 62), 5, 2 ** 40]),
        "i8": mx.array([-128, 0, 127], dtype=mx.int8),
        "u64": mx.array(np.array([2 ** 64 - 1, 1], dtype=np.uint64)),
        "u16": mx.arange(9, dtype=mx.uint16),
        "flags": mx.array([True, False, True]),
        "empty": mx.zeros((0, 3)),
        "scalar": mx.array(3.5),
    }
    path = os.path.join(out, "mlx_written.safetensors")
    mx.save_safetensors(path, arrays, metadata={"format": "mlx", "from": "mlx"})
    res = subprocess.run([tool, "read", path], capture_output=True, text=True, check=True)
    got = json.loads(res.stdout)
    if got.pop("__metadata__") != {"format": "mlx", "from": "mlx"}:
        raise SystemExit(f"FAIL {path}: metadata differs")
    if sorted(got) != sorted(arrays):
        raise SystemExit(f"FAIL {path}: names {sorted(got)}")
    for name, a in arrays.items():
        g = got[name]
        dt = MX_NAME[a.dtype]
        raw = np.array(a.astype(mx.uint8) if dt == "BOOL" else a.view(MX_UINT[WIDTH[dt]])).tobytes()
        if g["dtype"] != dt or g["shape"] != list(a.shape) or g["fnv1a64"] != fnv1a64(raw):
            raise SystemExit(f"FAIL {path}: {name}: reader saw {g}, mlx has {dt} {list(a.shape)}")
    return len(arrays)


def main():
    tool, out = sys.argv[1], sys.argv[2]
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    subprocess.run([tool, "write", out], check=True)
    with open(os.path.join(out, "manifest.json")) as f:
        manifest = json.load(f)

    checked_mlx = checked_np = 0
    for d, files in manifest["files"].items():
        by_file = {}
        for fn in files:
            path = os.path.join(d, fn)
            np_tensors, np_meta = numpy_load(path)
            arrays, meta = {}, np_meta
            if not any(dt in MLX_UNSUPPORTED for dt, _, _ in np_tensors.values()):
                arrays, meta = mx.load(path, return_metadata=True)
            want_meta = {"format": "mlx", "writer": "moex io_reference_tool"}
            if meta != want_meta or np_meta != want_meta:
                raise SystemExit(f"FAIL {path}: metadata {meta} / {np_meta}")
            by_file[fn] = (arrays, np_tensors)
        if len(files) > 1:
            with open(os.path.join(d, "model.safetensors.index.json")) as f:
                index = json.load(f)
            where = {n: fn for fn, (_, np_t) in by_file.items() for n in np_t}
            if index["weight_map"] != where:
                raise SystemExit(f"FAIL {d}: index weight_map does not match the shard contents")
            total = sum(len(raw) for _, np_t in by_file.values() for (_, _, raw) in np_t.values())
            if index["metadata"]["total_size"] != total:
                raise SystemExit(f"FAIL {d}: total_size {index['metadata']['total_size']} != {total}")
        names_in_files = sorted(n for _, np_t in by_file.values() for n in np_t)
        want_names = sorted(t["name"] for t in manifest["tensors"] if t["dir"] == d)
        if names_in_files != want_names:
            raise SystemExit(f"FAIL {d}: tensor names differ from the manifest")

        for t in (t for t in manifest["tensors"] if t["dir"] == d):
            fn = next(fn for fn, (_, np_t) in by_file.items() if t["name"] in np_t)
            arrays, np_tensors = by_file[fn]
            dt, shape, raw = np_tensors[t["name"]]
            if dt != t["dtype"] or shape != t["shape"]:
                raise SystemExit(f"FAIL {fn}: {t['name']} header says {dt} {shape}")
            w = WIDTH[dt]
            # numpy view of the raw bytes.
            bits = np.frombuffer(raw, dtype=UINT[w])
            if dt in ("F64", "F32", "F16"):
                vals = bits.view({8: np.float64, 4: np.float32, 2: np.float16}[w])
            elif dt == "BF16":
                vals = (bits.astype(np.uint32) << 16).view(np.float32)
            else:
                vals = None
            compare(f"{fn} (numpy)", t, vals, bits)
            checked_np += 1
            if dt in MLX_UNSUPPORTED:
                continue
            a = arrays.get(t["name"])
            if a is None or list(a.shape) != t["shape"]:
                raise SystemExit(f"FAIL {fn} (mlx): {t['name']} missing or shape {None if a is None else a.shape}")
            if dt in FLOATS:
                compare(f"{fn} (mlx)", t, np.array(a.astype(mx.float32)), None)
            elif dt == "BOOL":
                compare(f"{fn} (mlx)", t, None, np.array(a.astype(mx.uint8)))
            else:  # integers (and F8_E4M3, which MLX loads as uint8 bytes): bit patterns
                compare(f"{fn} (mlx)", t, None, np.array(a.view(MX_UINT[w])))
            checked_mlx += 1
    want_mlx = sum(1 for t in manifest["tensors"] if t["dtype"] not in MLX_UNSUPPORTED)
    if checked_mlx != want_mlx or checked_np != len(manifest["tensors"]):
        raise SystemExit(f"FAIL: checked {checked_mlx}/{want_mlx} in mlx, {checked_np} in numpy")
    n_read = check_mlx_written(tool, out)
    print(f"mlx_load_check: {checked_mlx} tensors identical in mlx.core.load, "
          f"{checked_np} in the numpy parser (F64/F8_E5M2 unsupported by mx.load); "
          f"{n_read} tensors from mx.save_safetensors identical through our reader")


if __name__ == "__main__":
    main()
