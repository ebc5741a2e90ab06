#!/usr/bin/env python3
"""Checks the GGUF twins: for tiny checkpoints of every family the writer supports, the twin read
back with gguf's GGUFReader and dequantized with gguf.quants has every tensor of the checkpoint,
at its shape, with values within the Q4_0 / Q8_0 requantization error bound derived from each
block's data; the reader's dequantization equals mx.dequantize where MLX is installed. With
--llama-greedy (scripts/peers/llamacpp.sh builds it) it also runs moex and llama.cpp on the same
prompt ids and reports the greedy tokens and the logits' difference on moex's token sequence.

usage: gguf_twin_test.py --moex build/tools/moex --work DIR [--llama-greedy BIN] [--strict-greedy]

tiny-qwen3-moe has a dense first layer (mlp_only_layers = [0]) that llama.cpp's qwen3moe cannot
hold: the writer must refuse it by name, and the qwen3 twin is checked on the same checkpoint
with that layer removed (layers renumbered, config updated), which is all-MoE.
"""
import argparse
import json
import struct
import subprocess
import sys
from pathlib import Path

import gguf
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gguf_twin import columns_normalized, permute_rope_rows, twin  # noqa: E402
from mlx_checkpoint import Checkpoint  # noqa: E402
from twin_families import (FAMILIES, Unsupported, llama3_rope_factors,  # noqa: E402
                           text_config)

Q = gguf.GGMLQuantizationType
PROMPT = [1, 2, 3]
STEPS = 8
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def requant_bound(values, qtype):
    """Per element, the largest error gguf's reference quantizer can make on this data: a block of
    32 gets d = amax / m (m = 8 for Q4_0, 127 for Q8_0), stored as f16; rounding costs d/2 (d at
    Q4_0's clipped +8 end) and the f16 rounding of d at most m * |d16 - d|."""
    m, edge = {Q.Q4_0: (8.0, 1.0), Q.Q8_0: (127.0, 0.5)}[qtype]
    blocks = values.reshape(-1, 32).astype(np.float64)
    d = np.abs(blocks).max(axis=1) / m
    d16 = d.astype(np.float16).astype(np.float64)
    bound = edge * np.maximum(d, d16) + m * np.abs(d16 - d)
    bound = bound * (1 + 1e-5) + np.finfo(np.float32).tiny  # f32 arithmetic of the quantizer
    return np.repeat(bound, 32).reshape(values.shape)


def moex_values(ckpt, entry, cfg):
    """What moex computes for this twin tensor, permuted as the twin needs (float64)."""
    if entry["name"] == "rope_freqs.weight":  # llama4: computed from the llama3 rope_scaling
        return llama3_rope_factors(cfg, int(cfg["head_dim"])).astype(np.float64)
    src = entry["source"]
    prefix = src.rsplit(".", 1)[0]
    # A Linear's bias and the bare tensors (glm4moe's exp_probs_b from e_score_correction_bias,
    # gpt-oss's sinks) are float copies of the source; the rest its dequantized weight.
    bare = not src.endswith(".weight")
    w = ckpt.float(src) if bare else ckpt.dequantize(prefix)
    w = np.asarray(w, dtype=np.float64)
    if entry.get("kv_b_split"):  # deepseek2: kv_b_proj's key rows transposed, or value rows
        half, nope, v, latent = entry["kv_b_split"]
        w = w.reshape(-1, nope + v, latent)
        w = w[:, :nope, :].transpose(0, 2, 1) if half == "k" else w[:, nope:, :]
    if entry["name"].endswith(".exp_probs_b.bias"):  # ERNIE's [1, E]
        w = w.reshape(entry["shape"])
    if entry.get("qkv_rows"):  # bailing_moe: a row range of query_key_value
        w = w[entry["qkv_rows"][0]:entry["qkv_rows"][1]]
    if entry.get("columns_normalized"):  # bailing_moe's norm_head, as the converter applies it
        w = np.asarray(columns_normalized(w), dtype=np.float64)
    if entry["name"].startswith("blk.") and entry["name"].endswith("ffn_gate_inp_shexp.weight"):
        w = w.reshape(-1)
    if entry["name"].endswith("shortconv.conv.weight"):  # lfm2moe: MLX [H, L, 1] -> [H, L]
        w = w.reshape(w.shape[0], w.shape[1])
    w = hybrid_values(w, entry, text_config(cfg))
    if entry["rope_permuted"]:
        heads = cfg["num_attention_heads"] if ".attn_q." in entry["name"] else \
            cfg.get("num_key_value_heads", cfg["num_attention_heads"])
        w = permute_rope_rows(w, heads)
    return w


def hybrid_values(w, entry, cfg):
    """The converters' transforms of the Gated DeltaNet and Mamba-2 tensors (conversion/qwen.py
    Qwen3NextModel and _LinearAttentionVReorderBase, conversion/nemotron.py NemotronHModel and
    conversion/mamba.py Mamba2Model), written out again here from their description."""
    name = entry["name"]
    if entry.get("qkvz_split"):  # in_proj_qkvz's per-key-head [q, k, v, z] regrouped
        half, kh, dk, rv = entry["qkvz_split"]
        g = w.reshape(kh, 2 * dk + 2 * rv, -1)
        w = (np.concatenate([g[:, :dk].reshape(-1, g.shape[-1]), g[:, dk:2 * dk].reshape(
            -1, g.shape[-1]), g[:, 2 * dk:2 * dk + rv].reshape(-1, g.shape[-1])])
             if half == "qkv" else g[:, 2 * dk + rv:].reshape(-1, g.shape[-1]))
    if name.endswith(".ssm_a"):  # -exp(A_log), stored as float32
        w = (-np.exp(w)).astype(np.float32).astype(np.float64)
    if name.endswith(".ssm_conv1d.weight"):
        w = w.reshape(w.shape[0], -1)
    if cfg["model_type"] == "nemotron_h":
        if name.endswith((".ssm_a", ".ssm_d")):
            w = w.reshape(-1, 1)
        if name.endswith(".ssm_norm.weight"):
            w = w.reshape(int(cfg["n_groups"]), -1)
    if cfg["model_type"] == "qwen3_5_moe":
        kh, vh = int(cfg["linear_num_key_heads"]), int(cfg["linear_num_value_heads"])
        dk, dv = int(cfg["linear_key_head_dim"]), int(cfg["linear_value_head_dim"])
        lead = 2 * kh * dk if name.endswith((".attn_qkv.weight", ".ssm_conv1d.weight")) else 0
        unit = dv if name.endswith((".attn_qkv.weight", ".ssm_conv1d.weight",
                                    ".attn_gate.weight", ".ssm_out.weight")) else 1
        if name.endswith((".attn_qkv.weight", ".ssm_conv1d.weight", ".attn_gate.weight",
                          ".ssm_beta.weight", ".ssm_alpha.weight", ".ssm_a", ".ssm_dt.bias",
                          ".ssm_out.weight")):
            # grouped (value head j of key head g at g r + j) -> tiled (at j kh + g)
            r = vh // kh
            perm = [lead + ((p % kh) * r + p // kh) * unit + e
                    for p in range(vh) for e in range(unit)]
            perm = list(range(lead)) + perm
            w = w[:, perm] if name.endswith(".ssm_out.weight") else w[perm]
    return w


def check_against_mlx(ckpt, label):
    try:
        import mlx.core as mx
    except ImportError:
        print(f"skip {label}: mx.dequantize cross-check (mlx not importable)")
        return
    worst = 0.0
    for name in ckpt.names():
        if not name.endswith(".scales"):
            continue
        prefix = name[: -len(".scales")]
        bits, group = ckpt.quant_params(prefix)
        ref = mx.dequantize(mx.array(np.asarray(ckpt.raw(prefix + ".weight"))),
                            mx.array(ckpt.float(prefix + ".scales")),
                            mx.array(ckpt.float(prefix + ".biases")), group_size=group, bits=bits)
        mine = ckpt.dequantize(prefix)
        scale = max(float(np.abs(mine).max()), 1e-30)
        worst = max(worst, float(np.abs(np.array(ref, dtype=np.float32) - mine).max()) / scale)
    check(worst <= 4 * np.finfo(np.float32).eps,
          f"{label}: reader's dequantization = mx.dequantize (f32 scales) to {worst:.2e} of max|w|")


def check_tensors(ckpt_dir, gguf_path, meta, label):
    ckpt = Checkpoint(ckpt_dir)
    cfg = text_config(ckpt.config)
    reader = gguf.GGUFReader(str(gguf_path))
    tensors = {t.name: t for t in reader.tensors}
    check(len(tensors) == len(meta["tensors"]),
          f"{label}: {len(tensors)} GGUF tensors, {len(meta['tensors'])} planned")
    worst = 0.0
    for entry in meta["tensors"]:
        t = tensors.get(entry["name"])
        if t is None:
            check(False, f"{label}: {entry['name']} missing from the GGUF")
            continue
        got = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float64)
        want = moex_values(ckpt, entry, cfg)
        shape_ok = (list(reversed([int(x) for x in t.shape])) == list(want.shape)
                    and got.shape == want.shape)
        if not shape_ok:
            check(False, f"{label}: {entry['name']} GGUF {list(t.shape)} vs moex {want.shape}")
            continue
        if t.tensor_type == Q.F32:
            err_ok = np.array_equal(got, want)
            ratio = 0.0 if err_ok else float("inf")
        else:
            bound = requant_bound(want, t.tensor_type)
            ratio = float((np.abs(got - want) / bound).max())
            err_ok = ratio <= 1.0
        worst = max(worst, ratio)
        if not err_ok:
            check(False, f"{label}: {entry['name']} ({t.tensor_type.name}) error {ratio:.3f} of "
                  "its bound")
    check(not [f for f in failures if f.startswith(label + ":")],
          f"{label}: {len(meta['tensors'])} tensors, shapes equal, worst error {worst:.3f} of "
          "the derived requantization bound (F32 exact)")
    n_vocab = len(reader.fields["tokenizer.ggml.tokens"].data)
    check(n_vocab == cfg["vocab_size"], f"{label}: {n_vocab} GGUF tokens = vocab_size")


def without_dense_layers(src_dir, dst_dir):
    """A copy of a qwen3_moe checkpoint with its mlp_only_layers dropped, layers renumbered."""
    ckpt = Checkpoint(src_dir)
    cfg = dict(ckpt.config)
    dense = set(cfg.get("mlp_only_layers") or [])
    keep = [i for i in range(cfg["num_hidden_layers"]) if i not in dense]
    renumber = {old: new for new, old in enumerate(keep)}
    out = {}
    for name in ckpt.names():
        parts = name.split(".")
        if name.startswith("model.layers."):
            old = int(parts[2])
            if old in dense:
                continue
            parts[2] = str(renumber[old])
        out[".".join(parts)] = (ckpt.dtype(name), np.asarray(ckpt.raw(name)))
    cfg["num_hidden_layers"], cfg["mlp_only_layers"] = len(keep), []
    for key in ("quantization", "quantization_config"):
        if isinstance(cfg.get(key), dict):
            q = {}
            for k, v in cfg[key].items():
                if k.startswith("model.layers."):
                    parts = k.split(".")
                    if int(parts[2]) in dense:
                        continue
                    parts[2] = str(renumber[int(parts[2])])
                    k = ".".join(parts)
                q[k] = v
            cfg[key] = q
    write_checkpoint(src_dir, dst_dir, cfg, out)


def write_checkpoint(src_dir, dst_dir, cfg, out):
    """DST as an edited copy of SRC: SRC's tokenizer files, config.json from cfg and one
    model.safetensors of out (name -> (dtype, array)); returns DST's Path."""
    dst = Path(dst_dir)
    dst.mkdir(parents=True, exist_ok=True)
    for extra in ("tokenizer.json", "tokenizer_config.json"):
        if (Path(src_dir) / extra).is_file():
            (dst / extra).write_bytes((Path(src_dir) / extra).read_bytes())
    (dst / "config.json").write_text(json.dumps(cfg, indent=2) + "\n")
    write_safetensors(dst / "model.safetensors", out)
    return dst


def write_safetensors(path, tensors):
    header, offset = {"__metadata__": {"format": "mlx"}}, 0
    for name, (dtype, arr) in tensors.items():
        header[name] = {"dtype": dtype, "shape": list(arr.shape),
                        "data_offsets": [offset, offset + arr.nbytes]}
        offset += arr.nbytes
    blob = json.dumps(header).encode()
    blob += b" " * (-len(blob) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(blob)) + blob)
        for _, arr in tensors.values():
            f.write(np.ascontiguousarray(arr).tobytes())


def pack(values, bits):
    per_word = 32 // bits
    v = values.astype(np.uint32).reshape(*values.shape[:-1], values.shape[-1] // per_word, per_word)
    shifts = np.arange(per_word, dtype=np.uint32) * bits
    return np.bitwise_or.reduce(v << shifts, axis=-1).astype(np.uint32)


def exact_grid_copy(src_dir, dst_dir):
    """A copy whose MLX affine weights lie exactly on the twin's grid, so the twin holds the very
    same numbers: per group a power-of-two scale d (exact in bf16 and f16) and bias -8d (4-bit,
    w = (q - 8) d) or -128d (8-bit, q in 1..255); every 32-block holds one q at the negative end,
    so its amax, and hence Q4_0's / Q8_0's d, is exactly 8d / 127d. Then the engines differ only
    in arithmetic, not in weights."""
    from mlx_checkpoint import unpack
    ckpt = Checkpoint(src_dir)
    out = {}
    for name in ckpt.names():
        prefix, part = name.rsplit(".", 1)
        if part in ("scales", "biases"):
            continue
        if part == "weight" and ckpt.is_quantized(prefix):
            bits, group = ckpt.quant_params(prefix)
            if bits not in (4, 8) or group % 32:
                raise Unsupported(f"{prefix}: exact grid needs 4/8 bits, group multiple of 32")
            q = unpack(np.asarray(ckpt.raw(name)), bits).astype(np.int32)
            if bits == 8:
                q = np.clip(q, 1, 255)
            q[..., ::32] = 0 if bits == 4 else 1
            s = ckpt.float(prefix + ".scales")
            d = np.exp2(np.round(np.log2(np.maximum(np.abs(s), 2.0 ** -14)))).astype(np.float32)
            mid = 8.0 if bits == 4 else 128.0
            to_bf16 = lambda a: (a.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
            out[name] = ("U32", pack(q, bits))
            out[prefix + ".scales"] = ("BF16", to_bf16(d))
            out[prefix + ".biases"] = ("BF16", to_bf16(-mid * d))
        else:
            out[name] = (ckpt.dtype(name), np.asarray(ckpt.raw(name)))
    dst = Path(dst_dir)
    dst.mkdir(parents=True, exist_ok=True)
    for extra in ("config.json", "tokenizer.json", "tokenizer_config.json"):
        if (Path(src_dir) / extra).is_file():
            (dst / extra).write_bytes((Path(src_dir) / extra).read_bytes())
    write_safetensors(dst / "model.safetensors", out)


def moex_logits(moex, ckpt_dir, dump):
    cmd = [moex, "generate", "-m", str(ckpt_dir), "--prompt-ids", ",".join(map(str, PROMPT)),
           "-n", str(STEPS), "--ignore-eos", "--threads", "2", "--dump-logits", str(dump)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    ids = [int(x) for x in done.stdout.split()]
    vocab = json.loads(Path(str(dump) + ".json").read_text())["vocab"]
    return ids, np.fromfile(dump, dtype=np.float32).reshape(-1, vocab)


def llama_logits(binary, gguf_path, forced, dump):
    cmd = [binary, str(gguf_path), ",".join(map(str, PROMPT)), str(STEPS), "2",
           ",".join(map(str, forced)) if forced else "-"] + ([str(dump)] if dump else [])
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {done.returncode}\n{done.stderr[-1500:]}")
    out = json.loads(done.stdout.strip().splitlines()[-1])
    logits = np.fromfile(dump, dtype=np.float32).reshape(-1, out["n_vocab"]) if dump else None
    return out["tokens"], logits


def compare_engines(args, ckpt_dir, gguf_path, label, strict):
    work = Path(args.work)
    m_ids, m_log = moex_logits(args.moex, ckpt_dir, work / f"{label}.moex.f32")
    l_free, _ = llama_logits(args.llama_greedy, gguf_path, None, None)
    l_forced, l_log = llama_logits(args.llama_greedy, gguf_path, m_ids, work / f"{label}.llama.f32")
    rel = np.linalg.norm(m_log - l_log, axis=1) / np.linalg.norm(m_log, axis=1)
    spread = np.linalg.norm(m_log - m_log.mean(axis=1, keepdims=True), axis=1)
    rel_centered = np.linalg.norm((m_log - m_log.mean(1, keepdims=True))
                                  - (l_log - l_log.mean(1, keepdims=True)), axis=1) / spread
    same_argmax = int(sum(a == b for a, b in zip(m_ids, l_forced)))
    line = (f"{label}: moex {m_ids} | llama.cpp greedy {l_free} | argmax on moex's sequence "
            f"{same_argmax}/{len(m_ids)} equal; logits rel. RMS difference (mean-centred) max "
            f"{rel_centered.max():.3g}, median {np.median(rel_centered):.3g} (uncentred max "
            f"{rel.max():.3g})")
    if strict:
        check(m_ids == l_free, line)
    else:
        print("info " + line)
    return {"label": label, "moex": m_ids, "llama_free": l_free, "llama_forced": l_forced,
            "rel_rms_centered": rel_centered.tolist(), "rel_rms": rel.tolist()}


def writer_presets(moex):
    """The tiny test preset of every family the writer supports (twin_families.FAMILIES), as the
    binary's registry names them (`make-model --list-presets --json`); not qwen3_moe's, whose
    dense first layer main() checks apart."""
    out = subprocess.run([moex, "make-model", "--list-presets", "--json"], check=True,
                         capture_output=True, text=True).stdout
    return [p["name"] for p in json.loads(out)
            if p["family_test"] and p["family"] in FAMILIES and p["family"] != "qwen3_moe"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--moex", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--llama-greedy", help="moex-llama-greedy from scripts/peers/llamacpp.sh")
    ap.add_argument("--strict-greedy", action="store_true",
                    help="fail when the exact-grid twins' greedy tokens differ from moex's")
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)

    def make(preset):
        d = work / preset
        subprocess.run([args.moex, "make-model", "--preset", preset, "--out", str(d), "-q",
                        "--reuse", "--threads", "2"], check=True, capture_output=True)
        cfg = json.loads((d / "config.json").read_text())
        from checkpoint_edits import with_moe_in_dense_layers, without_mlp_blocks
        if cfg["model_type"] == "qwen3_next":  # llama.cpp's qwen3next makes every layer MoE
            return with_moe_in_dense_layers(d, work / f"{preset}-allmoe")
        if cfg["model_type"] == "nemotron_h":
            # A MoE nemotron_h_moe file has no dense MLP block, one expert group (llama.cpp
            # asserts a used-group count the converter does not write) and no dt limit.
            e = without_mlp_blocks(d, work / f"{preset}-nomlp")
            cfg = json.loads((e / "config.json").read_text())
            cfg.update(n_group=1, topk_group=1)
            cfg.pop("time_step_limit", None)
            (e / "config.json").write_text(json.dumps(cfg, indent=1))
            return e
        if cfg["model_type"] == "bailing_moe":  # Ling-lite's shape, llama.cpp's bailingmoe
            from checkpoint_edits import bailing_as_ling_lite
            return bailing_as_ling_lite(d, work / f"{preset}-lite")
        if cfg["model_type"] == "hunyuan":
            from checkpoint_edits import hunyuan_as_llamacpp  # (it imports this module)
            return hunyuan_as_llamacpp(d, work / f"{preset}-llamacpp")
        if cfg["model_type"] in ("deepseek_v2", "deepseek_v3"):
            # llama.cpp's deepseek2 YaRN takes mscale = mscale_all_dim (as DeepSeek-V2's
            # configs have them); the tiny preset sets them apart, which the writer refuses.
            cfg["rope_scaling"]["mscale"] = cfg["rope_scaling"]["mscale_all_dim"]
        elif cfg["model_type"] == "llama4":
            # llama.cpp's llama4 chunks attention by 8192 whatever the checkpoint says; the
            # tiny preset's chunk is its 4096 context, which the writer refuses.
            cfg["text_config"]["attention_chunk_size"] = 8192
        else:
            return d
        e = work / f"{preset}-edited"
        e.mkdir(exist_ok=True)
        for f in d.iterdir():
            if f.name != "config.json" and not (e / f.name).exists():
                (e / f.name).symlink_to(f.resolve())
        (e / "config.json").write_text(json.dumps(cfg, indent=1))
        return e

    qwen3 = make("tiny-qwen3-moe")
    try:
        twin(qwen3, work / "tiny-qwen3-moe.gguf", progress=False)
        check(False, "tiny-qwen3-moe: the writer refuses mlp_only_layers")
    except Unsupported as e:
        check("mlp_only_layers" in str(e), f"tiny-qwen3-moe refused: {e}")
    fixtures = [("tiny-qwen3-moe-allmoe", work / "tiny-qwen3-moe-allmoe")]
    without_dense_layers(qwen3, fixtures[0][1])
    presets = writer_presets(args.moex)
    check(len(presets) == len(FAMILIES) - 1,
          f"a tiny preset for every writer family but qwen3_moe: {presets}")
    fixtures += [(p, make(p)) for p in presets]
    report = []
    for label, ckpt_dir in fixtures:
        check_against_mlx(Checkpoint(ckpt_dir), label)
        meta = twin(ckpt_dir, work / f"{label}.gguf", progress=False)
        check(abs(meta["bits_per_weight_gguf"] - meta["bits_per_weight_moex"]) < 1e-9,
              f"{label}: {meta['bits_per_weight_gguf']:.4f} bits/weight on both sides")
        check_tensors(ckpt_dir, work / f"{label}.gguf", meta, label)
        exact_dir = work / f"{label}-exact"
        exact_grid_copy(ckpt_dir, exact_dir)
        exact_meta = twin(exact_dir, work / f"{label}-exact.gguf", progress=False)
        check_tensors(exact_dir, work / f"{label}-exact.gguf", exact_meta, f"{label}-exact")
        if args.llama_greedy:
            report.append(compare_engines(args, exact_dir, work / f"{label}-exact.gguf",
                                          f"{label}-exact", args.strict_greedy))
            report.append(compare_engines(args, ckpt_dir, work / f"{label}.gguf", label, False))
    if not args.llama_greedy:
        print("skip moex vs llama.cpp greedy tokens: no --llama-greedy (scripts/peers/llamacpp.sh)")
    (work / "engines.json").write_text(json.dumps(report, indent=1) + "\n")
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
