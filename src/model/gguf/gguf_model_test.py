#!/usr/bin/env python3
"""moex loading GGUF models: the project's tiny checkpoints written as GGUF with llama.cpp's
names and metadata (tools/peers/gguf_twin.py, gguf-py's GGUFWriter following
convert_hf_to_gguf.py), loaded by moex from the file and from the checkpoint directory.

  reference (no llama.cpp needed):
    - float32 / float16 checkpoints -> F32 / F16 GGUF: greedy tokens and every logit
      bit-identical between `moex generate -m DIR` and `-m FILE.gguf` (mixtral: q/k rows
      permuted by the writer and put back by the loader, so a wrong inverse permutation
      cannot pass);
    - 4-bit checkpoints on an exact Q4_0 / Q8_0 grid -> Q4_0 / Q8_0 GGUF: the same weights
      repacked into other groups; tokens equal, logits within the bound below;
    - gpt-oss's mxfp4 checkpoint -> MXFP4 GGUF (the same codes and E8M0 scales): bit-identical;
      the tiny DeepSeek-V2 with its expert groups (reference only: llama.cpp ranks groups by
      another rule) bit-identical as F32;
    - the checkpoints as llama.cpp's arch can hold them (the edits below: dots1's KV heads
      written out, DeepSeek's mscale, Hunyuan's renormalization, folded RoPE base and shared MLP
      cut to the experts' width, the tiny Ling in Ling-lite's shape, the tiny ERNIE with a
      correction bias, ...), which the directory load runs as well;
    - token ids of `moex tokenize FILE.gguf` = those of the checkpoint's tokenizer.json on a
      corpus with unicode, digits and whitespace runs; `-p TEXT` through the GGUF tokenizer.
  --peer (label peer; exit 77 = skipped, saying why, when the llama.cpp build is absent):
    - llama.cpp loads every file (names, shapes, metadata); on moex's token sequence its argmax
      equals moex's wherever the race is not closer than the engines' logit difference, and its
      logits lie within the measured bound;
    - a Q4_K_M file made by llama-quantize (Q4_K, Q6_K, ... as llama.cpp picks) loads in moex
      and agrees with llama.cpp on the same file; so do llama-quantize's Q2_K, Q3_K_M, Q5_K_M,
      Q6_K, Q4_1, Q5_1, IQ4_NL and IQ4_XS files of the qwen3 checkpoint;
    - token ids of moex's GGUF tokenizer = llama.cpp's llama_tokenize on the corpus.
  SentencePiece ("llama") vocabulary: a 1024-piece BPE model trained with the sentencepiece
  package (tools/peers/twin_spm.py) in the tiny Mixtral's GGUF twin:
    - reference: moex's ids = sentencepiece's own on the texts without special tokens, and
      moex decodes them back to the text; `generate -p TEXT` runs;
    - peer: ids = llama_tokenize's with parse_special on and off and without BOS, decode =
      llama_detokenize, and greedy generation from a text prompt as for the other files.

usage: gguf_model_test.py --moex BIN --work DIR [--peer]
"""
import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO / "tools" / "peers"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from checkpoint_edits import (bailing_as_ling_lite, ernie_with_correction_bias,  # noqa: E402
                              hunyuan_as_llamacpp, with_kv_heads_repeated,
                              with_moe_in_dense_layers, without_mlp_blocks)
from gguf_twin import twin  # noqa: E402
from gguf_file_edits import dequantized_copy, with_nextn_layer  # noqa: E402
from gguf_twin_test import exact_grid_copy, without_dense_layers  # noqa: E402
from twin_spm import spm_vocab, train as train_spm  # noqa: E402

PROMPT = [1, 2, 3]
STEPS = 8
# Quantized twins hold the checkpoint's exact values in other groups (F32 scales, groups of
# 32) and run other kernels: measured max |dlogit| / max |logit| 8.3e-7 .. 1.4e-6 (4 families);
# a wrong q/k row order gives 6e-3.
QUANT_REL_BOUND = 1e-5
# moex vs llama.cpp on the same file, logits' mean-centred relative RMS difference per step
# (docs/gguf.md has the measurements): F32 files measured up to 1.13e-4 .. 1.74e-4, the
# rounding of llama.cpp's F16 KV cache (2^-11 = 4.9e-4 per element) is the bound; quantized
# files (Q4_0/Q8_0 and llama-quantize's Q4_K_M) up to 6.5e-3 .. 2.61e-2 (the largest: glm4moe's
# Q4_K_M, three layers with a dense FFN and shared experts, all quantized), from llama.cpp's
# 8-bit activations in its quantized matmuls (llama.cpp on that file dequantized to F32 agrees
# with moex on the Q4_K_M file to 1.9e-4); bound 3.2e-2, 1.2x that. Since then the tiny
# DeepSeek-V3's Q4_K_M measured 2.74e-2 (q_proj variant 2.53e-2), 1.17x under the bound, and
# llama.cpp on its F32 dequantization agrees with moex on it to 9.1e-5 (1.0e-4): the same cause.
PEER_F32_BOUND = 4.9e-4
# F16 files measured up to 3.35e-4 .. 5.88e-4: llama.cpp also rounds the activations to F16 for
# its F16 matmuls, two roundings of 2^-11.
PEER_F16_BOUND = 9.8e-4
PEER_QUANT_BOUND = 3.2e-2
# Two files quantize more of the model than the others: gpt-oss with every matmul in MXFP4
# (attention and router too; make-model --mode mxfp4) measured 8.19e-2 at one step (median
# 1.48e-2), the tiny DeepSeek-V2's Q4_K_M (q LoRA, kv and MoE matmuls all quantized) 4.86e-2.
# llama.cpp on the F32 dequantization of the same files agrees with moex on the files to 8.9e-5
# and 9.1e-5 (2026-12-07; checked on every run, f32_oracle), so the excess is llama.cpp's 8-bit
# activations; bounds 1.2x measured. The tiny Llama-4's Q4_K_M (4 MoE layers with shared experts,
# every matmul quantized) measured 2.85e-2, under the common bound but its largest; on its F32
# dequantization llama.cpp agrees to 1.63e-4.
# The tiny ERNIE with a correction bias (erniebias) as Q4_0 measured 2.95e-2 at one step (median
# 6.1e-3), 1.08x under the common bound: a biased selection puts experts closer together, and
# llama.cpp's 8-bit activations flip a near choice; on the file's F32 dequantization llama.cpp
# agrees with moex to 1.38e-4 (2026-12-07). Bound 1.2x measured, with the F32 oracle run.
# The tiny Qwen3-Next's F16 file: 0.169 at one step (median 2.6e-3), where moex's own F32 and F16
# files of the checkpoint differ as much (0.169: the F16 rounding moves that step, and the
# recurrent state carries it on); llama.cpp rounds its activations to F16 as well. llama.cpp on
# the file's F32 dequantization agrees with moex on the file to 5.1e-5 (f32_oracle).
# The tiny Qwen3.5-MoE's quantized files likewise: 0.197 (Q4_0) and 0.108 (Q4_K_M) at one step
# each, medians 7.8e-3 and 1.3e-2; llama.cpp on their F32 dequantizations agrees with moex on
# the files to 1.3e-5 and 6.3e-5. The tiny Nemotron-H's Q4_0 file: 0.0684 at one step (median
# 7.2e-3), llama.cpp on its F32 dequantization 4.1e-6.
PEER_BOUND_OVERRIDE = {"oss-mx": 9.8e-2, "ds2-f32-q4_k_m": 5.8e-2, "llama4-f32-q4_k_m": 3.4e-2,
                       "erniebias-q4": 3.6e-2, "qwen3next-f16": 0.2, "qwen35-q4": 0.24,
                       "qwen35-f32-q4_k_m": 0.13, "nemotron-q4": 0.082}
CORPUS = [
    "Hello, world!",
    "naïve café — Ünïcödé ∑ 日本語のテキスト 🙂🚀",
    "digits 0123456789 and 3.14159, 1e-10; 42nd",
    "tabs\tand  double  spaces   and\n\nnewlines \r\n end   ",
    "    leading spaces, trailing   ",
    "<|im_start|>user\nhi<|im_end|>",
    "I'm you're it's WE'LL THEY'D",
]
# The SentencePiece file's corpus: the texts above and whitespace, digits, byte fallback and
# special token text (control [INST] / [/INST] / <s> / </s> / <unk>, user-defined <|u_...|>).
SPM_CORPUS = CORPUS + [
    "", " ", "  two leading", "trailing ", "a  b   c    d", "line1\nline2\n\n\tindented",
    "12345 67 8.9", "日本語のテキスト 中文", "emoji 🙂🚀 and a ZWJ 👩\u200d💻",
    "[INST] question [/INST] answer</s>", "<s>bos in text", "[INST][INST]x", "unk <unk> here",
    "<|u_start|>user\nhi<|u_end|>", "a<|u_end|> b <|u_start|>c",
]
SPM_SPECIAL = ("[INST]", "[/INST]", "<s>", "</s>", "<unk>", "<|u_start|>", "<|u_end|>")
SPM_PROMPT = "The GGUF reader checks"
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def run(cmd):
    done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))}: exit {done.returncode}\n{done.stderr[-3000:]}")
    return done.stdout


def moex_generate(moex, model, dump, text=None):
    """Greedy ids and logits; with `text`, from `-p TEXT` (then also the prompt's ids)."""
    prompt = ["-p", text] if text is not None else ["--prompt-ids", ",".join(map(str, PROMPT))]
    run([moex, "generate", "-m", model, *prompt, "-n", STEPS, "--ignore-eos", "--threads", "2",
         "--dump-logits", dump])
    meta = json.loads(Path(str(dump) + ".json").read_text())
    logits = np.fromfile(dump, dtype=np.float32).reshape(-1, meta["vocab"])
    if text is not None:
        return meta["generated_ids"], logits, meta["prompt_ids"]
    return meta["generated_ids"], logits


def moex_tokenize(moex, model, text, *flags):
    return [int(x) for x in run([moex, "tokenize", model, "-t", text, *flags]).split()]


def moex_decode(moex, model, ids):
    cmd = [str(moex), "tokenize", str(model), "--decode", ",".join(map(str, ids))]
    done = subprocess.run(cmd, capture_output=True)  # bytes: keep "\r\n" as it is
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: exit {done.returncode}\n{done.stderr[-3000:]}")
    out = done.stdout.decode("utf-8")
    return out[:-1] if out.endswith("\n") else out


def llama(binary, gguf_path, forced, dump, prompt=PROMPT):
    cmd = [binary, gguf_path, ",".join(map(str, prompt)), STEPS, 2,
           ",".join(map(str, forced)) if forced else "-"] + ([dump] if dump else [])
    out = json.loads(run(cmd).strip().splitlines()[-1])
    logits = np.fromfile(dump, dtype=np.float32).reshape(-1, out["n_vocab"]) if dump else None
    return out["tokens"], logits


def make(moex, work, preset, name, *extra):
    d = work / name
    run([moex, "make-model", "--preset", preset, "--out", d, "-q", "--reuse", "--threads", 2,
         *extra])
    return d


def edited_config(src, dst, edit):
    """DST: SRC's files (linked) with config.json passed through edit(dict)."""
    dst.mkdir(parents=True, exist_ok=True)
    for f in Path(src).iterdir():
        target = dst / f.name
        if f.name == "config.json":
            cfg = json.loads(f.read_text())
            edit(cfg)
            target.write_text(json.dumps(cfg, indent=1))
        elif not target.exists():
            target.symlink_to(f.resolve())
    return dst


def deepseek2_as_llamacpp(cfg, grouped=False):
    """The tiny DeepSeek-V2 as llama.cpp's deepseek2 can run it: mscale = mscale_all_dim (its
    YaRN takes them equal, as DeepSeek-V2's configs have them) and, unless `grouped`, one
    expert group (llama.cpp ranks groups by the sum of their top 2 scores, DeepSeek-V2's
    group_limited_greedy by the best: the routing would differ)."""
    rs = cfg["rope_scaling"]
    rs["mscale"] = rs["mscale_all_dim"]
    if not grouped:
        cfg.update(topk_method="greedy", n_group=1, topk_group=1)


def deepseek3_as_llamacpp(cfg):
    """The tiny DeepSeek-V3 with mscale = mscale_all_dim, as llama.cpp's deepseek2 YaRN takes
    them (and as DeepSeek-V3's and Kimi-K2's configs have them). Its 2 expert groups (1 kept)
    stay: llama.cpp ranks groups by the sum of their two best biased scores, DeepSeek-V3's
    noaux_tc rule."""
    cfg["rope_scaling"]["mscale"] = cfg["rope_scaling"]["mscale_all_dim"]


def granite_sensitive(cfg):
    """The tiny Granite MoE with embedding_multiplier 1.5 instead of 12: at 12 the scaled
    embeddings outweigh every layer's 0.22 x branch so much that wrong q/k rows moved the
    logits by only 1.6e-4 (within the F32 peer bound); at 1.5 the layers count."""
    cfg["embedding_multiplier"] = 1.5


def nemotron_as_llamacpp(cfg):
    """The tiny Nemotron-H as llama.cpp's nemotron_h_moe can run it: one expert group (the
    converter writes no expert_group_used_count, which llama.cpp requires with groups) and no dt
    limit (no key carries it; ggml_ssm_scan does not clip)."""
    cfg.update(n_group=1, topk_group=1)
    cfg.pop("time_step_limit", None)


def llama4_as_llamacpp(cfg):
    """The tiny Llama-4 with llama.cpp's hard-coded chunk of 8192 (the preset's is its 4096
    context; at the test's 11 positions no chunk boundary is reached either way)."""
    cfg["text_config"]["attention_chunk_size"] = 8192


# preset, short label, config edit (None: as made)
PRESETS = (("tiny-qwen3-moe", "qwen3", None), ("tiny-mixtral", "mixtral", None),
           ("tiny-qwen2-moe", "qwen2moe", None), ("tiny-olmoe", "olmoe", None),
           ("tiny-glm4-moe", "glm", None), ("tiny-deepseek-v2", "ds2", deepseek2_as_llamacpp),
           ("tiny-deepseek-v2-lite", "ds2lite", deepseek2_as_llamacpp),
           ("tiny-deepseek-v3", "ds3", deepseek3_as_llamacpp),
           ("tiny-deepseek-v3-q-proj", "ds3qp", deepseek3_as_llamacpp),
           ("tiny-gpt-oss", "oss", None), ("tiny-dots1", "dots1", None),
           ("tiny-ernie4-5-moe", "ernie", None), ("tiny-ernie4-5-moe", "erniebias", None),
           ("tiny-granitemoe", "granite", granite_sensitive),
           ("tiny-hunyuan", "hunyuan", None), ("tiny-bailing-moe", "bailing", None),
           ("tiny-lfm2-moe", "lfm2", None), ("tiny-llama4", "llama4", llama4_as_llamacpp),
           ("tiny-minimax", "minimax", None),
           ("tiny-qwen3-next", "qwen3next", None), ("tiny-qwen3-5-moe", "qwen35", None),
           ("tiny-nemotron-h", "nemotron", nemotron_as_llamacpp))


def fixtures(moex, work, only=None):
    """(label, checkpoint dir, gguf path, kind) for every case (of the `only` presets)."""
    out = []
    for preset, short, edit in PRESETS:
        if only and short not in only:
            continue
        kinds = [("f32", ["--bits", "0", "--dtype", "f32"]),
                 ("f16", ["--bits", "0", "--dtype", "f16"]), ("q4", [])]
        if short == "oss":  # gpt-oss ships mxfp4 weights: written as ggml MXFP4 blocks
            kinds.append(("mx", ["--mode", "mxfp4"]))
        for kind, extra in kinds:
            d = make(moex, work, preset, f"{short}-{kind}-src", *extra)
            if short == "qwen3":  # llama.cpp's qwen3moe has no dense layers
                dense_free = work / f"{short}-{kind}-allmoe"
                without_dense_layers(d, dense_free)
                d = dense_free
            if short == "qwen3next":  # llama.cpp's qwen3next makes every layer MoE
                d = with_moe_in_dense_layers(d, work / f"{short}-{kind}-allmoe")
            if short == "nemotron":  # a MoE nemotron_h file has no dense MLP block
                d = without_mlp_blocks(d, work / f"{short}-{kind}-nomlp")
            if short == "dots1":  # llama.cpp's dots1 has no GQA: KV heads written out
                d = with_kv_heads_repeated(d, work / f"{short}-{kind}-mha")
            if short == "hunyuan":  # renormalized, the base folded, the shared MLP narrowed
                d = hunyuan_as_llamacpp(d, work / f"{short}-{kind}-llamacpp")
            if short == "erniebias":  # moe_use_aux_free's correction bias, routed with
                d = ernie_with_correction_bias(d, work / f"{short}-{kind}-bias")
            if short == "bailing":  # Ling-lite's shape: llama.cpp's bailingmoe graph
                d = bailing_as_ling_lite(d, work / f"{short}-{kind}-lite")
            if edit is not None:
                d = edited_config(d, work / f"{short}-{kind}-edited", edit)
            if kind == "q4":
                exact = work / f"{short}-{kind}-exact"
                exact_grid_copy(d, exact)
                d = exact
            path = work / f"{short}-{kind}.gguf"
            twin(d, path, mode="f16" if kind == "f16" else "q4_0", progress=False)
            out.append((f"{short}-{kind}", d, path, kind))
    return out


def spm_fixture(work):
    """(label, checkpoint dir, gguf path, sentencepiece model): the float32 tiny Mixtral with a
    trained SentencePiece vocabulary of its 1024 ids."""
    d = work / "mixtral-f32-src"
    model = train_spm(work / "spm", 1024)
    path = work / "mixtral-spm.gguf"
    twin(d, path, mode="q4_0", progress=False, vocab=spm_vocab(model))
    return "mixtral-spm", d, path, model


def reference(args, work, cases):
    reference_cases(args, work, cases)
    tokenizer_reference(args, work, cases)


def reference_cases(args, work, cases):
    for label, d, path, kind in cases:
        ids_dir, log_dir = moex_generate(args.moex, d, work / f"{label}.dir.f32")
        ids_gguf, log_gguf = moex_generate(args.moex, path, work / f"{label}.gguf.f32")
        check(ids_dir == ids_gguf, f"{label}: greedy tokens from DIR {ids_dir} = from GGUF {ids_gguf}")
        if kind in ("f32", "f16", "mx"):  # the same tensors: views of the file, or copies
            # (mx: the MXFP4 blocks repacked into moex's mxfp4, the same codes and scales)
            same = log_dir.shape == log_gguf.shape and np.array_equal(
                log_dir.view(np.uint32), log_gguf.view(np.uint32))
            check(same, f"{label}: {log_dir.size} logits bit-identical ({kind.upper()} twin)")
        else:
            rel = float(np.abs(log_dir - log_gguf).max() / np.abs(log_dir).max())
            check(rel <= QUANT_REL_BOUND,
                  f"{label}: logits max |diff| / max |logit| = {rel:.3g} <= {QUANT_REL_BOUND:g} "
                  "(same values, other groups and kernels)")


def tokenizer_reference(args, work, cases):
    label, d, path, _ = cases[0]
    bad = [t for t in CORPUS if moex_tokenize(args.moex, d, t) != moex_tokenize(args.moex, path, t)]
    check(not bad, f"{label}: token ids from GGUF = from tokenizer.json on {len(CORPUS)} texts"
          + (f"; differ on {bad!r}" if bad else ""))
    gen = [args.moex, "generate", "-p", "Hello there", "-n", 4, "--ignore-eos", "--threads", 2]
    a, b = run(gen + ["-m", d]), run(gen + ["-m", path])
    check(a == b, f"{label}: `generate -p TEXT` prints the same from DIR and GGUF")
    spm_reference(args, work)
    grouped_reference(args, work)
    nextn = with_nextn_layer(work / "glm-f32.gguf", work / "glm-f32-nextn.gguf")
    ids_a, log_a = moex_generate(args.moex, work / "glm-f32.gguf", work / "glm-plain.f32")
    ids_b, log_b = moex_generate(args.moex, nextn, work / "glm-nextn.f32")
    check(ids_a == ids_b and np.array_equal(log_a.view(np.uint32), log_b.view(np.uint32)),
          "glm-f32 with a NextN layer: its tensors skipped, tokens and logits bit-identical to "
          "the file without it")


def grouped_reference(args, work):
    """The tiny DeepSeek-V2 with its expert groups (2, 1 kept: group_limited_greedy), which the
    twin writes as expert_group_count / expert_group_used_count: moex maps them back to the
    model's own grouped routing, so the F32 twin is bit-identical to the directory (llama.cpp
    ranks groups otherwise, docs/gguf.md, so this case is reference only)."""
    d = edited_config(work / "ds2-f32-src", work / "ds2grp-f32-edited",
                      lambda c: deepseek2_as_llamacpp(c, grouped=True))
    path = work / "ds2grp-f32.gguf"
    twin(d, path, mode="q4_0", progress=False)
    ids_dir, log_dir = moex_generate(args.moex, d, work / "ds2grp.dir.f32")
    ids_gguf, log_gguf = moex_generate(args.moex, path, work / "ds2grp.gguf.f32")
    check(ids_dir == ids_gguf and np.array_equal(log_dir.view(np.uint32), log_gguf.view(np.uint32)),
          f"ds2grp-f32 (2 expert groups, 1 kept): greedy tokens {ids_gguf} and {log_dir.size} "
          "logits bit-identical to the directory")


def spm_reference(args, work):
    import sentencepiece as spm
    label, _, path, model = spm_fixture(work)
    sp = spm.SentencePieceProcessor(model_file=str(model))
    plain = [t for t in SPM_CORPUS if not any(s in t for s in SPM_SPECIAL)]
    bad_ids, bad_text = [], []
    for text in plain:
        ids = moex_tokenize(args.moex, path, text, "--no-special")
        if ids != sp.encode(text):
            bad_ids.append((text, ids, sp.encode(text)))
        if moex_decode(args.moex, path, ids) != text:
            bad_text.append(text)
    check(not bad_ids, f"{label}: token ids of moex's SentencePiece GGUF tokenizer = sentencepiece "
          f"{spm.__version__}'s on {len(plain)} texts" + (f"; differ: {bad_ids!r}" if bad_ids else ""))
    check(not bad_text, f"{label}: decode(encode(text)) = text on {len(plain)} texts"
          + (f"; differ on {bad_text!r}" if bad_text else ""))
    ids, _, prompt = moex_generate(args.moex, path, work / f"{label}.ref.f32", SPM_PROMPT)
    check(prompt[0] == sp.bos_id() and prompt[1:] == sp.encode(SPM_PROMPT) and len(ids) == STEPS,
          f"{label}: `generate -p {SPM_PROMPT!r}` prompt ids {prompt} = BOS + sentencepiece's; "
          f"{len(ids)} tokens generated")


def f32_oracle(args, work, label, path):
    """For the files with a bound of their own (PEER_BOUND_OVERRIDE): moex on the file against
    llama.cpp on its F32 dequantization, within the F32 bound, which shows that the excess over
    the usual bound is llama.cpp's activation rounding."""
    if label not in PEER_BOUND_OVERRIDE:
        return []
    f32 = dequantized_copy(path, work / f"{label}-as-f32.gguf")
    return [compare(args, work, f"{label}-vs-f32", path, PEER_F32_BOUND, llama_path=f32)]


def peer_cases(args, work, cases):
    """Each file against llama.cpp, and llama-quantize's Q4_K_M of each F32 checkpoint."""
    report = []
    for label, d, path, kind in cases:
        bound = {"f32": PEER_F32_BOUND, "f16": PEER_F16_BOUND}.get(kind, PEER_QUANT_BOUND)
        report.append(compare(args, work, label, path, PEER_BOUND_OVERRIDE.get(label, bound)))
        report += f32_oracle(args, work, label, path)
    # llama-quantize's Q4_K_M (a BF16 intermediate from the float32 checkpoints).
    for label, d, _, kind in cases:
        if kind != "f32":
            continue
        path = work / f"{label}-q4_k_m.gguf"
        meta = twin(d, path, mode="q4_k_m", llama_quantize=args.llama_quantize, progress=False)
        types = sorted({t["type"] for t in meta["tensors"]})
        print(f"info {label}-q4_k_m tensor types: {types}")
        report.append(compare(args, work, f"{label}-q4_k_m", path,
                              PEER_BOUND_OVERRIDE.get(f"{label}-q4_k_m", PEER_QUANT_BOUND)))
        report += f32_oracle(args, work, f"{label}-q4_k_m", path)
    return report


def peer(args, work, cases):
    report = peer_cases(args, work, cases)
    # Every other type llama-quantize writes that moex reads, on the qwen3 checkpoint (whose
    # widths are whole 256-element super-blocks, so the K types are not swapped for others).
    # The oracle is llama.cpp on the file's F32 dequantization (gguf-py's), which has no
    # activation rounding of its own: moex on the quantized file must agree with it as closely
    # as two F32 runs do. (On the same file llama.cpp's 8-bit activations differ more with
    # 2- and 3-bit weights: measured max 0.0665 on Q2_K and 0.135 on Q3_K_M.)
    label, d, _, _ = next(c for c in cases if c[0] == "qwen3-f32")
    for qtype in ("q2_k", "q3_k_m", "q5_k_m", "q6_k", "q4_1", "q5_1", "iq4_nl", "iq4_xs"):
        path = work / f"{label}-{qtype}.gguf"
        meta = twin(d, path, mode=qtype, llama_quantize=args.llama_quantize, progress=False)
        types = sorted({t["type"] for t in meta["tensors"]})
        print(f"info {label}-{qtype} tensor types: {types}")
        f32 = dequantized_copy(path, work / f"{label}-{qtype}-as-f32.gguf")
        report.append(compare(args, work, f"{label}-{qtype}", path, PEER_F32_BOUND, llama_path=f32))
    # Token ids: llama.cpp's llama_tokenize (special tokens parsed) vs moex's GGUF tokenizer.
    label, _, path, _ = cases[0]
    bad = []
    for i, text in enumerate(CORPUS):
        f = work / f"corpus-{i}.txt"
        f.write_bytes(text.encode("utf-8"))
        ref = json.loads(run([args.llama_greedy, "--tokenize", path, f]).strip().splitlines()[-1])
        if ref["ids"] != moex_tokenize(args.moex, path, text):
            bad.append(text)
    check(not bad, f"{label}: token ids of moex's GGUF tokenizer = llama.cpp's llama_tokenize on "
          f"{len(CORPUS)} texts" + (f"; differ on {bad!r}" if bad else ""))
    spm_peer(args, work, report)
    nextn = with_nextn_layer(work / "glm-f32.gguf", work / "glm-f32-nextn.gguf")
    report.append(compare(args, work, "glm-f32-nextn", nextn, PEER_F32_BOUND))
    (work / "peer.json").write_text(json.dumps(report, indent=1) + "\n")


def spm_peer(args, work, report):
    label, _, path, _ = spm_fixture(work)
    bad = {"ids": [], "ids_no_parse_special": [], "ids_no_bos": [], "detokenized": []}
    for i, text in enumerate(SPM_CORPUS):
        f = work / f"spm-corpus-{i}.txt"
        f.write_bytes(text.encode("utf-8"))
        ref = json.loads(run([args.llama_greedy, "--tokenize", path, f]).strip().splitlines()[-1])
        mine = {"ids": moex_tokenize(args.moex, path, text),
                "ids_no_parse_special": moex_tokenize(args.moex, path, text, "--no-parse-special"),
                "ids_no_bos": moex_tokenize(args.moex, path, text, "--no-special")}
        for key, ids in mine.items():
            if ids != ref[key]:
                bad[key].append((text, ids, ref[key]))
        detok = bytes.fromhex(ref["detokenized_hex"]).decode("utf-8", errors="replace")
        if moex_decode(args.moex, path, ref["ids_no_bos"]) != detok:
            bad["detokenized"].append((text, detok))
    for key, what in (("ids", "llama_tokenize (BOS added, special tokens parsed)"),
                      ("ids_no_parse_special", "llama_tokenize with parse_special off"),
                      ("ids_no_bos", "llama_tokenize without BOS (tokenize --no-special)"),
                      ("detokenized", "llama_detokenize of those ids (moex tokenize --decode)")):
        check(not bad[key], f"{label}: moex = {what} on {len(SPM_CORPUS)} texts"
              + (f"; differ: {bad[key]!r}" if bad[key] else ""))
    report.append(compare(args, work, label, path, PEER_F32_BOUND, text=SPM_PROMPT))


def compare(args, work, label, path, bound, text=None, llama_path=None):
    """moex on PATH against llama.cpp on LLAMA_PATH (default: the same file)."""
    lpath = llama_path or path
    if text is None:
        m_ids, m_log = moex_generate(args.moex, path, work / f"{label}.peer.moex.f32")
        prompt = PROMPT
    else:  # a text prompt: each engine's tokenizer, then the same comparison
        m_ids, m_log, m_prompt = moex_generate(args.moex, path, work / f"{label}.peer.moex.f32", text)
        f = work / f"{label}.prompt.txt"
        f.write_bytes(text.encode("utf-8"))
        prompt = json.loads(run([args.llama_greedy, "--tokenize", path, f]).strip()
                            .splitlines()[-1])["ids"]
        check(m_prompt == prompt, f"{label}: prompt {text!r} as ids: moex {m_prompt}, llama.cpp {prompt}")
    l_free, _ = llama(args.llama_greedy, lpath, None, None, prompt)
    l_forced, l_log = llama(args.llama_greedy, lpath, m_ids, work / f"{label}.peer.llama.f32", prompt)
    centred = lambda x: x - x.mean(axis=1, keepdims=True)  # noqa: E731
    rel = np.linalg.norm(centred(m_log) - centred(l_log), axis=1) / np.linalg.norm(
        centred(m_log), axis=1)
    # Greedy tokens: equal wherever moex's top-2 margin exceeds twice the two engines' largest
    # logit difference at that step (a closer race may go either way and is reported).
    diff = np.abs(m_log - l_log).max(axis=1)
    top2 = np.sort(m_log, axis=1)[:, -2:]
    margin = top2[:, 1] - top2[:, 0]
    decided = margin > 2 * diff
    wrong = [i for i in range(len(m_ids)) if decided[i] and m_ids[i] != l_forced[i]]
    close = int((~decided).sum())
    check(not wrong, f"{label}: argmax equal on moex's sequence at every step whose top-2 margin "
          f"exceeds 2x the logit difference ({len(m_ids) - close} of {len(m_ids)}; wrong at "
          f"{wrong}); free-running greedy moex {m_ids}, llama.cpp {l_free}")
    check(float(rel.max()) <= bound, f"{label}: logits vs llama.cpp on moex's sequence, "
          f"mean-centred rel. RMS max {rel.max():.3g} (median {np.median(rel):.3g}) <= {bound:g}")
    return {"label": label, "moex": m_ids, "llama": l_free, "llama_forced": l_forced,
            "rel_rms_centred": rel.tolist(), "max_abs_diff": diff.tolist(),
            "top2_margin": margin.tolist()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--moex", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--peer", action="store_true", help="the llama.cpp checks, with the build of "
                    "scripts/peers/llamacpp.sh under $MOEX_PEERS_DIR (default ~/.cache/moex-peers);"
                    " exit 77 (skipped) when it is absent")
    ap.add_argument("--only", help="comma-separated preset labels (qwen3, dots1, ...): their "
                    "twins' checks alone, without the tokenizer and whole-file cases")
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    if args.peer:
        root = Path(os.environ.get("MOEX_PEERS_DIR") or Path.home() / ".cache" / "moex-peers")
        bins = root / "llama_cpp_python-0.3.36" / "build" / "bin"
        args.llama_greedy, args.llama_quantize = bins / "moex-llama-greedy", bins / "llama-quantize"
        if not (args.llama_greedy.is_file() and args.llama_quantize.is_file()):
            print(f"SKIP: no llama.cpp build at {bins} (moex-llama-greedy, llama-quantize); "
                  f"build it with MOEX_PEERS_DIR={root} scripts/peers/llamacpp.sh (~10 min of "
                  "2 cores) to run moex against llama.cpp on GGUF files")
            return 77
    cases = fixtures(args.moex, work, args.only and args.only.split(","))
    if args.only:  # the per-preset checks alone (a development run)
        (reference_cases if not args.peer else peer_cases)(args, work, cases)
    elif not args.peer:
        reference(args, work, cases)
    else:
        peer(args, work, cases)
    print(f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
