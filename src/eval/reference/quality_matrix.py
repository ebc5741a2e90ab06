"""The quality table of docs/perplexity.md: the trained fixture (fixtures/) converted by
`mlx_lm convert` into each weight format, run by moex at each precision tier, compared with
the unquantized model at the exact tier (the base) on the held-out text: perplexity, mean and
99th-percentile KL divergence, same top token. Beside it: mlx-lm's perplexity of each
converted checkpoint in f32 activations and moex's exact tier against it, mlx-lm's f32
perplexity of the original, and moex on the held-out text against its words and its tokens
shuffled.

    python quality_matrix.py --moex build/moex --out DIR [--ctx 256] [--chunks 16]
        [--formats bf16,q4g64,...] [--tiers exact,standard,fast] [--fixture DIR]

Writes DIR/quality.json (every figure, with the commands' settings) and prints a Markdown
table. The test quality_gate_test.py runs the same functions on fewer windows.
"""
import argparse
import contextlib
import json
import os
import random
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
FIXTURE = os.path.join(ROOT, "fixtures", "qwen3-moe-django")

# name -> mlx_lm convert arguments (mlx-lm's defaults otherwise: group 64, affine).
RECIPES = {
    "bf16": [],
    "q8g64": ["-q", "--q-bits", "8", "--q-group-size", "64"],
    "q6g64": ["-q", "--q-bits", "6", "--q-group-size", "64"],
    "q5g64": ["-q", "--q-bits", "5", "--q-group-size", "64"],
    "q4g64": ["-q", "--q-bits", "4", "--q-group-size", "64"],
    "q3g64": ["-q", "--q-bits", "3", "--q-group-size", "64"],
    "q4g32": ["-q", "--q-bits", "4", "--q-group-size", "32"],
    "q4g128": ["-q", "--q-bits", "4", "--q-group-size", "128"],
    "mixed_3_6": ["-q", "--quant-predicate", "mixed_3_6"],
    "mxfp4": ["-q", "--q-mode", "mxfp4"],
    "mxfp8": ["-q", "--q-mode", "mxfp8"],
    "nvfp4": ["-q", "--q-mode", "nvfp4"],
}
TIERS = ["exact", "standard", "fast"]
VERBOSE = False
sys.path.insert(0, HERE)
import mlx_perplexity as ref  # noqa: E402


def run(cmd, **kw):
    p = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if p.returncode != 0:
        sys.exit(f"failed ({p.returncode}): {' '.join(cmd)}\n{p.stderr[-3000:]}")
    return p.stdout


def convert(recipe, out):
    """mlx_lm convert with the recipe's flags, in this process (one MLX import for all)."""
    from mlx_lm.convert import configure_parser, convert as mlx_convert
    args = configure_parser().parse_args(["--hf-path", FIXTURE, "--mlx-path", out]
                                         + RECIPES[recipe])
    with open(os.devnull, "w") as null, contextlib.redirect_stdout(sys.stderr if VERBOSE else null):
        mlx_convert(**vars(args))
    return out


def moex_perplexity(moex, model, extra):
    """One `moex perplexity -o json` run; its first run's figures."""
    out = run([moex, "perplexity", "-m", model, "-o", "json"] + extra)
    return json.loads(out)["runs"][0]


def mlx_perplexity(model, tokens_from, out, dtype, kl_base=""):
    return ref.run(model, tokens_from, out, dtype, kl_base=kl_base)


def shuffled_words(text, seed=7):
    """The same words in a random order, each gap of white space (newlines, indentation) kept
    where it was: the text's layout and word counts stay, its word order goes."""
    parts = re.split(r"(\s+)", text)
    words = parts[0::2]
    random.Random(seed).shuffle(words)
    parts[0::2] = words
    return "".join(parts)


def read_tokens(logits_file):
    return ref.read_header(logits_file)[4].reshape(-1).tolist()


def matrix(moex, work, ctx, chunks, formats, tiers, threads=None, checkpoint=None,
           mlx_per_format=True):
    """Every figure of the table, as a dict. mlx_per_format=False leaves out mlx-lm's run on
    each converted checkpoint and moex's comparison with it (the table's last columns)."""
    text = os.path.join(FIXTURE, "heldout.txt")
    thr = ["--threads", str(threads)] if threads else []
    common = ["--ctx", str(ctx), "--chunks", str(chunks)] + thr
    base_logits = os.path.join(work, "base.logits")
    res = {"ctx": ctx, "chunks": chunks, "formats": {}}
    res["base"] = moex_perplexity(moex, FIXTURE, ["-f", text, "--precision", "exact",
                                                  "--save-logits", base_logits] + common)
    # The oracle: mlx-lm in f32 on the same bf16 weights and tokens.
    res["mlx_f32"] = mlx_perplexity(FIXTURE, base_logits, os.path.join(work, "mlx.logits"),
                                    "float32", kl_base=base_logits)
    res["moex_vs_mlx_f32"] = moex_perplexity(
        moex, FIXTURE, ["--precision", "exact", "--kl-divergence",
                        os.path.join(work, "mlx.logits")] + thr)
    shuffled = os.path.join(work, "shuffled.txt")
    with open(text, encoding="utf-8") as f, open(shuffled, "w", encoding="utf-8") as g:
        g.write(shuffled_words(f.read()))
    res["shuffled_words"] = moex_perplexity(moex, FIXTURE, ["-f", shuffled, "--precision",
                                                            "exact"] + common)
    # The held-out text's own tokens in a random order (the base file holds them).
    tokens = read_tokens(base_logits)
    random.Random(11).shuffle(tokens)
    ids = os.path.join(work, "shuffled.ids")
    with open(ids, "w") as f:
        f.write(",".join(map(str, tokens)))
    res["shuffled_tokens"] = moex_perplexity(moex, FIXTURE, ["--token-ids", ids, "--precision",
                                                             "exact"] + common)
    for fmt in formats:
        model = convert(fmt, os.path.join(work, fmt))
        row = {"tiers": {}}
        for tier in tiers:
            row["tiers"][tier] = moex_perplexity(
                moex, model, ["--precision", tier, "--kl-divergence", base_logits] + thr)
        # mlx-lm on the same converted checkpoint in f32 activations (MLX's CPU backend runs
        # bf16 activations ~50x slower and not at all for gather_mm): its figures against the
        # base, and moex's exact tier against it on the same quantized weights.
        if mlx_per_format:
            q_logits = os.path.join(work, "q.logits")
            row["mlx_f32"] = mlx_perplexity(model, base_logits, q_logits, "float32",
                                            kl_base=base_logits)
            row["moex_vs_mlx_f32"] = moex_perplexity(
                moex, model, ["--precision", "exact", "--kl-divergence", q_logits] + thr)
        res["formats"][fmt] = row
        if checkpoint:
            checkpoint(res)  # what is measured survives a later failure
        print(f"{fmt}: " + ", ".join(
            f"{t} KLD {row['tiers'][t]['kl']['kld_mean']:.3g}" for t in tiers), file=sys.stderr,
            flush=True)
    return res


def markdown(res, tiers):
    b = res["base"]
    lines = [f"Base: moex exact on the bf16 checkpoint, PPL {b['ppl']:.4f} ± {b['ppl_stderr']:.4f} "
             f"({b['scored_tokens']} tokens); mlx-lm f32 PPL {res['mlx_f32']['ppl']:.4f}, "
             f"KLD(moex exact || mlx-lm f32) {res['moex_vs_mlx_f32']['kl']['kld_mean']:.3g}; "
             f"same words shuffled PPL {res['shuffled_words']['ppl']:.1f}, "
             f"same tokens shuffled PPL {res['shuffled_tokens']['ppl']:.1f}.", "",
             "| format | tier | PPL | mean KLD | KLD p99 | same top | mlx-lm f32 PPL | mlx-lm f32 KLD | KLD(moex exact, mlx-lm f32) |",
             "|---|---|--:|--:|--:|--:|--:|--:|--:|"]
    for fmt, row in res["formats"].items():
        for i, t in enumerate(tiers):
            k = row["tiers"][t]["kl"]
            m = row["mlx_f32"]
            mlx = " | | "
            if i == 0:
                mlx = (f"{m['ppl']:.4f} | {m['kld_mean']:.3g} | "
                       f"{row['moex_vs_mlx_f32']['kl']['kld_mean']:.2g}")
            lines.append(f"| {fmt if i == 0 else ''} | {t} | {k['ppl_q']:.4f} | "
                         f"{k['kld_mean']:.3g} | {k['kld']['p99']:.3g} | "
                         f"{100 * k['same_top']:.2f}% | {mlx} |")
    return "\n".join(lines)


def main():
    global FIXTURE
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--moex", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--ctx", type=int, default=256)
    ap.add_argument("--chunks", type=int, default=0, help="0: every window of the text")
    ap.add_argument("--formats", default=",".join(RECIPES))
    ap.add_argument("--tiers", default=",".join(TIERS))
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--fixture", default=FIXTURE,
                    help="the HF-layout checkpoint with heldout.txt (default: %(default)s)")
    a = ap.parse_args()
    FIXTURE = os.path.abspath(a.fixture)
    formats = a.formats.split(",")
    tiers = a.tiers.split(",")
    for f in formats:
        if f not in RECIPES:
            sys.exit(f"--formats: unknown {f}; known: {', '.join(RECIPES)}")
    os.makedirs(a.out, exist_ok=True)
    def save(res):
        with open(os.path.join(a.out, "quality.json.partial"), "w") as f:
            json.dump(res, f, indent=1)
        os.replace(os.path.join(a.out, "quality.json.partial"),
                   os.path.join(a.out, "quality.json"))

    with tempfile.TemporaryDirectory(prefix="moex-quality-") as work:
        res = matrix(a.moex, work, a.ctx, a.chunks or 1 << 20, formats, tiers, a.threads,
                     checkpoint=save)
    save(res)
    print(markdown(res, tiers))


if __name__ == "__main__":
    main()
