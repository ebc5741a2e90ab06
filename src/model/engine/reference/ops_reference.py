# Recomputes the cases written by ops_reference_test.cc with mlx / mlx-lm and compares them
# with moex's outputs (normalized RMS error, tolerance per op derived from f32 epsilon and the
# size of the computation). Exit 0: all match; 1: a mismatch; 77: mlx is unavailable.
import json
import math
import os
import sys

try:
    import mlx.core as mx
    import numpy as np
    from mlx_lm.models.base import create_causal_mask
    from mlx_lm.models.rope_utils import SuScaledRoPE, initialize_rope
    from mlx_lm import sample_utils
except ImportError as e:  # pragma: no cover
    print(f"ops_reference: cannot import mlx/mlx-lm: {e}")
    sys.exit(77)

EPS = float(np.finfo(np.float32).eps)


def load(d, name, shape, dtype=np.float32):
    return np.fromfile(os.path.join(d, name), dtype=dtype).reshape(shape)


def nrms(got, ref):
    ref = np.asarray(ref, dtype=np.float64)
    got = np.asarray(got, dtype=np.float64)
    den = math.sqrt(float(np.mean(ref * ref))) or 1.0
    return math.sqrt(float(np.mean((got - ref) ** 2))) / den


def rope_module(c):
    dims, base, trad = c["dims"], c["base"], c["traditional"]
    kind = c["kind"]
    if kind == "default":
        return initialize_rope(dims, base, trad, None, None)
    if kind == "linear":
        return initialize_rope(dims, base, trad, {"rope_type": "linear", "factor": c["factor"]}, None)
    if kind == "llama3":
        cfg = {"rope_type": "llama3", "factor": c["factor"], "low_freq_factor": c["low_freq_factor"],
               "high_freq_factor": c["high_freq_factor"],
               "original_max_position_embeddings": c["original_max_position"]}
        return initialize_rope(dims, base, trad, cfg, c["max_position"])
    if kind == "yarn":
        cfg = {"rope_type": "yarn", "factor": c["factor"],
               "original_max_position_embeddings": c["original_max_position"],
               "beta_fast": c["beta_fast"], "beta_slow": c["beta_slow"], "mscale": c["mscale"],
               "mscale_all_dim": c["mscale_all_dim"]}
        return initialize_rope(dims, base, trad, cfg, c["max_position"])
    if kind == "dynamic":
        return initialize_rope(dims, base, trad, {"rope_type": "dynamic", "factor": c["factor"]},
                               c["max_position"])
    if kind == "proportional":  # as gemma4_text.py builds its full-attention RoPE
        cfg = {"rope_type": "proportional", "factor": c["factor"],
               "partial_rotary_factor": c["rotated_dims"] / dims}
        return initialize_rope(dims, base, trad, cfg, None)
    if kind == "longrope":  # as phimoe.py builds it
        return SuScaledRoPE(dims, base=base, max_position_embeddings=c["max_position"],
                            original_max_position_embeddings=c["original_max_position"],
                            short_factor=c["short_factor"], long_factor=c["long_factor"],
                            short_mscale=c["short_mscale"] or None,
                            long_mscale=c["long_mscale"] or None)
    raise ValueError(kind)


def run_case(d, c):
    op = c["op"]
    if op == "rope":
        L, H, D = c["rows"], c["heads"], c["head_dim"]
        x = load(d, c["x"], (L, H, D))
        got = load(d, c["y"], (L, H, D))
        xm = mx.array(x).transpose(1, 0, 2)[None]  # [1, H, L, D]
        ref = rope_module(c)(xm, offset=c["offset"])
        ref = np.array(ref[0].transpose(1, 0, 2))
        # theta = pos * inv_freq is rounded in f32: relative error ~ pos * eps.
        return nrms(got, ref), 8 * (c["offset"] + L) * EPS
    if op in ("rms_norm", "layer_norm"):
        R, D = c["rows"], c["dim"]
        x, w = mx.array(load(d, c["x"], (R, D))), mx.array(load(d, c["w"], (D,)))
        got = load(d, c["y"], (R, D))
        if op == "rms_norm":
            ref = mx.fast.rms_norm(x, w, c["eps"])
        else:
            ref = mx.fast.layer_norm(x, w, mx.array(load(d, c["b"], (D,))), c["eps"])
        return nrms(got, np.array(ref)), 4 * math.sqrt(D) * EPS
    if op == "attention":
        H, KV, D, R, P = c["heads"], c["kv_heads"], c["head_dim"], c["rows"], c["past"]
        S = P + R
        q = mx.array(load(d, c["q"], (R, H, D))).transpose(1, 0, 2)[None]
        k = mx.array(load(d, c["k"], (S, KV, D))).transpose(1, 0, 2)[None]
        v = mx.array(load(d, c["v"], (S, KV, D))).transpose(1, 0, 2)[None]
        mask = create_causal_mask(R, offset=P)
        ref = mx.fast.scaled_dot_product_attention(q, k, v, scale=c["scale"], mask=mask)
        ref = np.array(ref[0].transpose(1, 0, 2))
        got = load(d, c["y"], (R, H, D))
        return nrms(got, ref), 4 * (S + D) * EPS
    if op == "qlinear":
        n, k, R, bits, gs = c["n"], c["k"], c["rows"], c["bits"], c["group_size"]
        x = mx.array(load(d, c["x"], (R, k)))
        w = mx.array(load(d, c["w_f32"], (n, k)))
        wq, s, b = mx.quantize(w, group_size=gs, bits=bits)
        packed = load(d, c["packed"], (n, k * bits // 32), np.uint32)
        if not np.array_equal(np.array(wq), packed):
            return float("inf"), 0.0  # moex's quantizer must be bit-identical to MLX's
        if not (np.array_equal(np.array(s), load(d, c["scales"], (n, k // gs)))
                and np.array_equal(np.array(b), load(d, c["biases"], (n, k // gs)))):
            return float("inf"), 0.0
        ref = mx.quantized_matmul(x, wq, s, b, transpose=True, group_size=gs, bits=bits)
        got = load(d, c["y"], (R, n))
        # The kernel may quantize x to int8 levels (kernels/qdot.h): each x_i moves by at most
        # max|x in its group| * x_step, a relative error of that order on the output.
        tol = 4 * math.sqrt(k) * EPS + 4.0 * c["x_step"]
        return nrms(got, np.array(ref)), tol
    if op == "filters":
        n = c["n"]
        lp = mx.array(load(d, c["logprobs"], (1, n)))
        worst = 0.0
        for ref, key in ((sample_utils.apply_top_p(lp, c["top_p"]), "top_p_out"),
                         (sample_utils.apply_min_p(lp, c["min_p"]), "min_p_out"),
                         (sample_utils.apply_top_k(lp, c["top_k"]), "top_k_out")):
            kept_ref = np.isfinite(np.array(ref)[0])
            kept_got = np.isfinite(load(d, c[key], (n,)))
            if not np.array_equal(kept_ref, kept_got):
                print(f"  {key}: moex keeps {kept_got.sum()}, mlx-lm keeps {kept_ref.sum()}")
                worst = float("inf")
        return worst, 0.0 if worst else 1.0
    raise ValueError(op)


def main():
    manifest = sys.argv[1]
    d = os.path.dirname(manifest)
    cases = json.load(open(manifest))
    failed = 0
    for c in cases:
        err, tol = run_case(d, c)
        ok = err <= tol
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {c['name']:40s} nrms {err:.3e} (tol {tol:.1e})")
    print(f"{len(cases) - failed}/{len(cases)} cases match mlx {mx.__version__}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
