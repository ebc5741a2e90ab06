# Which side of a parity gap is closer to exact arithmetic: mlx-lm run in float64 on a float
# checkpoint is the reference; moex (exact tier) and mlx-lm in float32 are each compared with it,
# step by step, on the same greedy tokens (mlx-lm float32's).
# Usage: float64_check.py MOEX MODEL_DIR [--prompt-ids 3,14,15] [--steps 8]
# MLX's gather_mm is float32-only on the CPU, so the experts' SwitchLinear runs as a gather of
# the weights and a matmul here (the same products, in float64).
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import parity  # noqa: E402  (exits 77 itself when mlx-lm is missing)
import mlx.core as mx  # noqa: E402
import mlx_lm.models.switch_layers as switch_layers  # noqa: E402


def switch_linear_any_dtype(self, x, indices, sorted_indices=False):
    y = mx.matmul(x, self["weight"][indices].swapaxes(-1, -2))
    if "bias" in self:
        y = y + mx.expand_dims(self["bias"][indices], -2)
    return y


def errors_against_float64(moex, model_dir, prompt_ids, steps):
    """Per step, logits nRMS of mlx-lm float32 and of moex (exact tier, fused on) against mlx-lm
    in float64, on mlx-lm float32's greedy tokens: (f32 errors, moex errors), or None when
    moex's greedy tokens differ."""
    ids = [int(x) for x in prompt_ids.split(",")]
    saved_call, saved_device = switch_layers.SwitchLinear.__call__, mx.default_device()
    mx.set_default_device(mx.cpu)
    switch_layers.SwitchLinear.__call__ = switch_linear_any_dtype
    try:
        f32, toks = parity.mlx_run(model_dir, ids, steps, True)
        f64, _ = parity.mlx_run(model_dir, ids, steps, False, dtype=mx.float64, tokens=toks)
    finally:
        switch_layers.SwitchLinear.__call__ = saved_call
        mx.set_default_device(saved_device)
    got, moex_toks, _ = parity.moex_dump_logits(moex, model_dir, prompt_ids, steps,
                                                ["--precision", "exact", "--fused", "on"])
    if moex_toks != toks:
        return None
    return ([parity.nrms(f32[s], f64[s]) for s in range(steps + 1)],
            [parity.nrms(got[s], f64[s]) for s in range(steps + 1)])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("moex")
    ap.add_argument("model")
    ap.add_argument("--prompt-ids", default="3,14,15,92,65,35,89,79,32,38,46,26,43")
    ap.add_argument("--steps", type=int, default=8)
    a = ap.parse_args()
    res = errors_against_float64(a.moex, a.model, a.prompt_ids, a.steps)
    if res is None:
        print("float64_check: moex's greedy tokens differ from mlx-lm float32's")
        return 1
    print("step  mlx-lm f32 vs f64  moex vs f64   (logits nRMS)")
    for s, (e32, em) in enumerate(zip(*res)):
        print(f"{s:4d}  {e32:17.2e}  {em:11.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
