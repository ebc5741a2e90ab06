#!/usr/bin/env python3
"""Reference test: moex's MLX quantizer (quant_ref_tool) against mx.quantize and
mx.dequantize (mlx CPU), bit for bit: affine for every bits x group size x dtype, and the fp
modes mxfp4 / mxfp8 / nvfp4 for every dtype.

For each of the 6 x 3 x 3 = 54 combinations one [rows][k] input is built from random rows
and corner-case rows (all-negative, all-positive, constant and zero groups, huge and tiny
magnitudes, subnormals, signed zeros, exact .5 ties, outliers, dtype max finite). The script
asserts identical packed words, scales and biases (quantize), and identical dequantized
output for the default dtype and for dtype=float32/float16/bfloat16, with moex dequantizing
MLX's own packed/scales/biases (so dequantize is checked even if quantize were wrong).
The fp-mode inputs add rows of exact E2M1 / E4M3 rounding ties, group maxima just above and
below 6 * 2^k and 448 * 2^k (where ceil(log2) of the scale changes), and E4M3 scale ties.
Prints one summary line per combination; exits 1 on any mismatch.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np
import mlx.core as mx

BITS = [2, 3, 4, 5, 6, 8]
FP_MODES = {"mxfp4": (4, 32), "mxfp8": (8, 32), "nvfp4": (4, 16)}  # bits, group size
GROUP_SIZES = [32, 64, 128]
DTYPES = {"f32": mx.float32, "f16": mx.float16, "bf16": mx.bfloat16}
OUT_DTYPES = {"f32": mx.float32, "f16": mx.float16, "bf16": mx.bfloat16}
K = 384  # a multiple of every group size (3 groups of 128, 12 of 32)


def max_finite(name):
    return {"f32": float(np.finfo(np.float32).max), "f16": 65504.0,
            "bf16": 3.3895313892515355e38}[name]


def fp_rows(mode, gs, rng):
    """Rows aimed at the fp modes' rounding decisions."""
    g = K // gs
    rows = []
    e2m1 = np.array([0, 0.5, 1, 1.5, 2, 3, 4, 6])
    mids = (e2m1[1:] + e2m1[:-1]) / 2                     # exact E2M1 ties
    e4m3 = np.array([2.0 ** e * (1 + m / 8) for e in range(-6, 9) for m in range(8)])
    e4m3 = np.concatenate([[j * 2.0 ** -9 for j in range(8)], e4m3[e4m3 <= 448]])
    mids8 = (e4m3[1:] + e4m3[:-1]) / 2                    # exact E4M3 ties
    top = 6.0 if mode != "mxfp8" else 448.0
    for k in (-3, 0, 2):
        for tie in (mids, -mids) if mode != "mxfp8" else (mids8, -mids8):
            def tied(i):
                v = rng.choice(tie, size=gs) * 2.0 ** k
                v[0] = top * 2.0 ** k                         # the group max sets scale 2^k
                return v
            rows.append(np.concatenate([tied(i) for i in range(g)]))
    for k in range(-8, 9, 4):                             # max just above / below top * 2^k
        for factor in (1 + 2 ** -23, 1 + 2 ** -10, 1 + 2 ** -7, 1 - 2 ** -8, 1 - 2 ** -11):
            v = rng.normal(size=K) * 2.0 ** k
            v[::gs] = top * 2.0 ** k * factor
            rows.append(v)
    if mode == "nvfp4":                                   # scales that tie on the E4M3 grid
        v = rng.normal(size=K) * 0.1
        v[::gs] = 6.0 * rng.choice(mids8[8:40], size=g)
        rows.append(v)
    return rows


def build_input(dtype_name, bits, gs, seed, mode="affine"):
    """Rows of corner cases followed by random rows, as float64 before the dtype cast."""
    rng = np.random.default_rng(seed)
    n_bins = (1 << bits) - 1
    rows = []
    g = K // gs

    def grouped(fn):  # one row, each group filled by fn(group_index) -> array of gs values
        return np.concatenate([fn(i) for i in range(g)])

    rows.append(np.zeros(K))                                          # zeros
    rows.append(grouped(lambda i: np.full(gs, [0.7, -3.25, 1e-3, 0.0, 12345.0][i % 5])))
    rows.append(-np.abs(rng.normal(size=K)) - 0.1)                    # all negative
    rows.append(np.abs(rng.normal(size=K)) + 0.1)                     # all positive
    # Huge magnitudes: 1e30 in f32/bf16; f16 tops out at 65504, so 1e4-scale clipped there.
    if dtype_name == "f16":
        rows.append(np.clip(rng.normal(size=K) * 3e4, -65504.0, 65504.0))
    else:
        rows.append(rng.normal(size=K) * 1e30)
    rows.append(rng.normal(size=K) * 1e-30)                           # tiny (0 in f16)
    rows.append(rng.normal(size=K) * 1e-6)                            # f16 subnormal range
    rows.append(rng.normal(size=K) * 1e-39)                           # f32 subnormals
    mf = max_finite(dtype_name)
    rows.append(grouped(lambda i: rng.choice([mf, -mf, 0.0, 1.0], size=gs)))  # max finite
    rows.append(grouped(lambda i: np.full(gs, mf if i % 2 else -mf)))          # const max
    # Exact ties: group spans 0..n_bins so scale is -1 and values j + 0.5 hit half steps.
    rows.append(grouped(lambda i: np.concatenate(
        [[0.0, float(n_bins)], (np.arange(gs - 2) % n_bins) + 0.5])))
    rows.append(grouped(lambda i: np.concatenate(
        [[0.0, -float(n_bins)], -((np.arange(gs - 2) % n_bins) + 0.5)])))
    # Outliers: small values with one large element of either sign per group.
    def outlier(i):
        v = rng.normal(size=gs) * 0.01
        v[rng.integers(gs)] = 50.0 * (1 if i % 2 else -1)
        return v
    rows.append(grouped(outlier))
    # Symmetric edges (|min| == |max|) and signed zeros.
    rows.append(grouped(lambda i: np.concatenate([[-2.0, 2.0], rng.uniform(-2, 2, gs - 2)])))
    rows.append(grouped(lambda i: np.where(rng.random(gs) < 0.5, -0.0, 0.0)))
    # Mixed magnitudes across groups (kept finite in the dtype), then plain random rows.
    top = 4 if dtype_name == "f16" else 30
    rows.append(grouped(lambda i: rng.normal(size=gs) * 10.0 ** rng.integers(-8, top + 1)))
    # Non-finite inputs: +-inf and NaN in some groups (scales/biases become inf/NaN; MLX's
    # NaN encodings and its q = 0 for NaN elements are matched too).
    def nonfinite(i):
        v = rng.normal(size=gs)
        kind = i % 4
        if kind == 0:
            v[rng.integers(gs)] = np.inf
        elif kind == 1:
            v[rng.integers(gs)] = -np.inf
        elif kind == 2:
            v[rng.integers(gs, size=3)] = np.nan
        return v
    rows.append(grouped(nonfinite))
    for _ in range(24):
        rows.append(rng.normal(size=K) * 10.0 ** rng.uniform(-3, 3))
    if mode != "affine":
        rows.extend(fp_rows(mode, gs, rng))
    x = np.stack(rows)
    with np.errstate(over="ignore"):
        x32 = x.astype(np.float32)
    return mx.array(x32).astype(DTYPES[dtype_name])


def raw_bytes(a):
    """The bytes of an mlx array (bf16/f16 through a uint16 view)."""
    if a.dtype in (mx.float16, mx.bfloat16):
        return np.array(a.view(mx.uint16)).tobytes()
    return np.array(a).tobytes()


def compare(name, got, want, itemsize):
    if got == want:
        return None
    g = np.frombuffer(got, dtype=np.uint8)
    w = np.frombuffer(want, dtype=np.uint8)
    if g.size != w.size:
        return f"{name}: size {g.size} vs mlx {w.size}"
    bad = np.nonzero(g != w)[0] // itemsize
    first = bad[0]
    gw = got[first * itemsize:(first + 1) * itemsize].hex()
    ww = want[first * itemsize:(first + 1) * itemsize].hex()
    return f"{name}: {len(np.unique(bad))} elements differ, first #{first}: moex {gw} mlx {ww}"


def run_tool(tool, args):
    r = subprocess.run([tool] + [str(a) for a in args], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"quant_ref_tool {' '.join(map(str, args))}: {r.stderr.strip()}")


def check_combination(tool, tmp, dtype_name, bits, gs, seed, mode="affine"):
    x = build_input(dtype_name, bits, gs, seed, mode)
    rows = x.shape[0]
    fp = mode != "affine"
    if fp:
        q, s = mx.quantize(x, group_size=gs, bits=bits, mode=mode, stream=mx.cpu)
        b = None
    else:
        q, s, b = mx.quantize(x, group_size=gs, bits=bits, stream=mx.cpu)
    kw = dict(group_size=gs, bits=bits, mode=mode, stream=mx.cpu)
    deq = {"native": mx.dequantize(q, s, b, **kw)}
    for on, odt in OUT_DTYPES.items():
        deq[on] = mx.dequantize(q, s, b, dtype=odt, **kw)
    mx.eval(q, s, *([b] if b is not None else []), *deq.values())
    native = {mx.float32: "f32", mx.float16: "f16", mx.bfloat16: "bf16"}[deq["native"].dtype]

    inp = os.path.join(tmp, "input")
    with open(inp, "wb") as f:
        f.write(raw_bytes(x))
    ours = os.path.join(tmp, "moex")
    run_tool(tool, ["quantize", dtype_name, rows, K, bits, gs, inp, ours, mode])
    mlxp = os.path.join(tmp, "mlx")
    for ext, arr in ((".packed", q), (".scales", s), (".biases", b)):
        if arr is None:
            continue
        with open(mlxp + ext, "wb") as f:
            f.write(raw_bytes(arr))
    from_mlx = os.path.join(tmp, "from_mlx")
    run_tool(tool, ["dequantize", dtype_name, rows, K, bits, gs, mlxp, from_mlx, mode])

    def read(path):
        with open(path, "rb") as f:
            return f.read()

    esz = 4 if dtype_name == "f32" else 2
    nesz = 4 if native == "f32" else 2
    problems = [
        compare("packed", read(ours + ".packed"), raw_bytes(q), 4),
        compare("scales", read(ours + ".scales"), raw_bytes(s), 1 if fp else esz),
        None if fp else compare("biases", read(ours + ".biases"), raw_bytes(b), esz),
        compare("deq(native)", read(from_mlx + ".deq_" + native), raw_bytes(deq["native"]), nesz),
    ]
    for on in OUT_DTYPES:
        oesz = 4 if on == "f32" else 2
        problems.append(compare(f"deq(dtype={on})", read(from_mlx + ".deq_" + on),
                                raw_bytes(deq[on]), oesz))
        # moex's own quantize -> dequantize chain must equal MLX's chain as well.
        problems.append(compare(f"quantize+deq(dtype={on})", read(ours + ".deq_" + on),
                                raw_bytes(deq[on]), oesz))
    problems = [p for p in problems if p]
    n = rows * K
    status = "OK" if not problems else "MISMATCH"
    print(f"mode={mode:6s} bits={bits} group_size={gs:3d} dtype={dtype_name:4s} rows={rows} "
          f"k={K} values={n}: packed/scales/{'' if fp else 'biases/'}dequantize(4 dtypes) "
          f"{status}")
    for p in problems:
        print(f"    {p}")
    return not problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tool", required=True, help="path of the quant_ref_tool executable")
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()
    print(f"mlx {mx.__version__}, device {mx.default_device()}")
    failures = 0
    total = 0
    with tempfile.TemporaryDirectory(prefix="moex_quant_ref_") as tmp:
        for dtype_name in DTYPES:
            for bits in BITS:
                for gs in GROUP_SIZES:
                    total += 1
                    seed = args.seed + 1000 * bits + gs + {"f32": 0, "f16": 1, "bf16": 2}[dtype_name]
                    if not check_combination(args.tool, tmp, dtype_name, bits, gs, seed):
                        failures += 1
            for mode, (bits, gs) in FP_MODES.items():
                total += 1
                seed = args.seed + 7 * bits + gs + {"f32": 0, "f16": 1, "bf16": 2}[dtype_name]
                if not check_combination(args.tool, tmp, dtype_name, bits, gs, seed, mode):
                    failures += 1
    print(f"{total - failures}/{total} combinations bit-identical to mx.quantize/mx.dequantize")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
