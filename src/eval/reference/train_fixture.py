"""Trains moex's quality fixtures: small MoE language models on real English text
(qwen3_moe, committed in fixtures/; --family glm4_moe, a second router kind).

Corpus: the documentation sources (docs/**/*.txt, reStructuredText prose with code samples)
of the Django 5.1.4 source distribution on the Python package index (BSD-3-Clause), pinned by
version and SHA-256, so every run reads the same bytes. Files are split by their sorted
position: every 20th file is held out (never trained on) for evaluation.

Tokenizer: a byte-level BPE trained by Hugging Face `tokenizers` on the training files
(vocabulary 4096, GPT-2's split regex, <|endoftext|> between files).

Model: mlx-lm's own qwen3_moe classes (the reference implementation moex matches), trained
in float32 on MLX's CPU backend with AdamW, the Switch-Transformer load-balancing loss
(weight 0.05) and the router z-loss (weight 0.001, ST-MoE) so that every expert is used and
the routers' logits stay small (without them the routers collapsed onto 4-11 of 16 experts
with near-zero entropy in a first run). Seeds are fixed; the output is a Hugging
Face-layout checkpoint (per-expert tensors, bfloat16, as the Hub ships Qwen3-MoE) with
tokenizer.json, the held-out text and a training report.

--family glm4_moe --mtp adds GLM-4.5's multi-token-prediction layer (model.layers.N), trained
jointly with the main model (fixture_mtp.py).

    python src/eval/reference/train_fixture.py --out DIR [--steps 200] [--sdist FILE]
                                               [--family glm4_moe [--mtp]]
"""
import argparse
import hashlib
import json
import math
import os
import subprocess
import sys
import tarfile
import tempfile
import time

import numpy as np

SDIST = "Django-5.1.4.tar.gz"
SDIST_SHA256 = "de450c09e91879fa5a307f696e57c851955c910a438a35e6b4c895e86bedc82a"
SEED = 20261206
Z_LOSS = 1e-3
VOCAB = 4096
SEQ = 256
BATCH = 16

CONFIG = {
    "architectures": ["Qwen3MoeForCausalLM"],
    "model_type": "qwen3_moe",
    "hidden_size": 256,
    "num_hidden_layers": 4,
    "intermediate_size": 768,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 64,
    "num_experts": 16,
    "num_experts_per_tok": 2,
    "decoder_sparse_step": 1,
    "mlp_only_layers": [],
    "moe_intermediate_size": 128,
    "norm_topk_prob": True,
    "rms_norm_eps": 1e-6,
    "rope_theta": 10000.0,
    "max_position_embeddings": 2048,
    "tie_word_embeddings": False,
    "vocab_size": VOCAB,
    "hidden_act": "silu",
    "attention_bias": False,
    "torch_dtype": "bfloat16",
    "bos_token_id": None,
    "eos_token_id": 0,
    "router_aux_loss_coef": 0.1,
    "output_router_logits": False,
}


# The second fixture: GLM-4.5's MoE (glm4_moe) with a different router: sigmoid scores,
# experts chosen within the best groups with a per-expert correction bias (DeepSeek-V3's
# auxiliary-loss-free balancing: the bias moves against each expert's load after every step,
# and only steers the choice), scores renormalized and scaled, plus a shared expert and a
# dense first layer.
GLM_CONFIG = {
    "architectures": ["Glm4MoeForCausalLM"],
    "model_type": "glm4_moe",
    "vocab_size": VOCAB,
    "hidden_size": 256,
    "intermediate_size": 768,
    "max_position_embeddings": 2048,
    "moe_intermediate_size": 128,
    "norm_topk_prob": True,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 64,
    "n_group": 4,
    "topk_group": 2,
    "n_shared_experts": 1,
    "n_routed_experts": 16,
    "routed_scaling_factor": 2.5,
    "num_experts_per_tok": 2,
    "first_k_dense_replace": 1,
    "num_hidden_layers": 4,
    "rms_norm_eps": 1e-5,
    "rope_theta": 10000.0,
    "rope_scaling": None,
    "use_qk_norm": True,
    "tie_word_embeddings": False,
    "attention_bias": True,
    "partial_rotary_factor": 0.5,
    "hidden_act": "silu",
    "torch_dtype": "bfloat16",
    "eos_token_id": 0,
    "bos_token_id": None,
}
BIAS_STEP = 0.01  # the correction bias's step per optimizer step (aux-loss-free balancing)
FAMILIES = {"qwen3_moe": CONFIG, "glm4_moe": GLM_CONFIG}


def corpus_files(sdist):
    """(name, text) of every docs/**/*.txt file of the sdist, sorted by name."""
    digest = hashlib.sha256(open(sdist, "rb").read()).hexdigest()
    if digest != SDIST_SHA256:
        sys.exit(f"{sdist}: SHA-256 {digest}, expected {SDIST_SHA256} ({SDIST})")
    out = []
    with tarfile.open(sdist) as tar:
        for m in tar.getmembers():
            parts = m.name.split("/")
            if m.isfile() and len(parts) > 2 and parts[1] == "docs" and m.name.endswith(".txt") \
                    and "_theme" not in parts:
                out.append(("/".join(parts[1:]), tar.extractfile(m).read().decode("utf-8")))
    out.sort()
    return out


def fetch_sdist(where):
    path = os.path.join(where, SDIST)
    if not os.path.exists(path):
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                        "--no-binary", ":all:", "django==5.1.4", "-d", where], check=True)
    return path


def train_tokenizer(texts, out_path):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=VOCAB, special_tokens=["<|endoftext|>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(texts, trainer=trainer)
    tok.save(out_path)
    return tok


def encode(tok, texts):
    ids = []
    for t in texts:
        ids.extend(tok.encode(t).ids)
        ids.append(0)  # <|endoftext|>
    return np.array(ids, dtype=np.int32)


def dense_moe_call(mx, block, x, recorded):
    """Qwen3MoeSparseMoeBlock's function computed densely: every expert on every token, the
    outputs weighted by the top-k scores (zero elsewhere). The same sum as mlx-lm's gather
    path, but as plain matrix products, which MLX's CPU backend runs ~30x faster in training
    (gather_mm's gradient is not blocked there). Router logits go to `recorded`."""
    logits = block.gate(x)
    recorded.append(logits)
    gates = mx.softmax(logits, axis=-1, precise=True)
    k = block.top_k
    inds = mx.stop_gradient(mx.argpartition(gates, kth=-k, axis=-1)[..., -k:])
    scores = mx.take_along_axis(gates, inds, axis=-1)
    if block.norm_topk_prob:
        scores = scores / mx.sum(scores, axis=-1, keepdims=True)
    weights = mx.put_along_axis(mx.zeros_like(gates), inds, scores, axis=-1)  # [..., E]
    sw = block.switch_mlp
    g = mx.einsum("...h,efh->...ef", x, sw.gate_proj.weight)
    u = mx.einsum("...h,efh->...ef", x, sw.up_proj.weight)
    act = (g * mx.sigmoid(g)) * u * weights[..., None]
    return mx.einsum("...ef,ehf->...h", act, sw.down_proj.weight)


def dense_glm_call(mx, block, x, recorded):
    """glm4_moe's MoE block computed densely (as dense_moe_call): the gate's own group
    selection, every expert on every token weighted by the chosen scores, plus the shared
    expert. The selected ids go to `recorded` for the bias update."""
    inds, scores = block.gate(x)
    recorded.append(inds)
    e = block.switch_mlp.gate_proj.weight.shape[0]
    weights = mx.put_along_axis(mx.zeros(x.shape[:-1] + (e,), dtype=scores.dtype), inds, scores,
                                axis=-1)
    sw = block.switch_mlp
    g = mx.einsum("...h,efh->...ef", x, sw.gate_proj.weight)
    u = mx.einsum("...h,efh->...ef", x, sw.up_proj.weight)
    act = (g * mx.sigmoid(g)) * u * weights[..., None].astype(x.dtype)
    return mx.einsum("...ef,ehf->...h", act, sw.down_proj.weight) + block.shared_experts(x)


def build_glm_model(mx, nn):
    from mlx_lm.models import glm4_moe
    args = glm4_moe.ModelArgs.from_dict(GLM_CONFIG)
    model = glm4_moe.Model(args)
    bound = 1.0 / math.sqrt(GLM_CONFIG["hidden_size"])
    for layer in model.model.layers:
        if isinstance(layer.mlp, glm4_moe.MoE):
            gate = layer.mlp.gate
            gate.weight = mx.random.uniform(-bound, bound, gate.weight.shape)
            gate.freeze(keys=["e_score_correction_bias"])  # moved by update_bias only
    return model, [], glm4_moe.MoE


def update_bias(mx, model, recorded, e, k):
    """Aux-loss-free balancing: each MoE layer's correction bias rises for experts chosen
    less than the mean and falls for those chosen more (the MTP layer's too, recorded last)."""
    moe_layers = [l.mlp for l in model.model.layers if hasattr(l.mlp, "switch_mlp")]
    if "mtp" in model:
        moe_layers.append(model.mtp.mlp)
    for block, inds in zip(moe_layers, recorded):
        counts = mx.sum(mx.eye(e)[inds.reshape(-1)], axis=0)
        gate = block.gate
        gate.e_score_correction_bias = gate.e_score_correction_bias + \
            BIAS_STEP * mx.sign(mx.mean(counts) - counts)


def build_model(mx, nn):
    from mlx_lm.models import qwen3_moe
    args = qwen3_moe.ModelArgs.from_dict(CONFIG)
    model = qwen3_moe.Model(args)
    recorded = []
    return model, recorded, qwen3_moe.Qwen3MoeSparseMoeBlock


def balance_loss(mx, logits, k, e):
    """Switch Transformer's loss: E * sum_e f_e * P_e over the batch's tokens."""
    probs = mx.softmax(logits.reshape(-1, e).astype(mx.float32), axis=-1)
    top = mx.stop_gradient(mx.argpartition(-probs, kth=k - 1, axis=-1)[:, :k])
    chosen = mx.zeros_like(probs)
    chosen = mx.put_along_axis(chosen, top, mx.ones(top.shape, dtype=probs.dtype), axis=-1)
    f = mx.mean(chosen, axis=0) / k
    p = mx.mean(probs, axis=0)
    return e * mx.sum(f * p)


OPENBLAS = "/usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3"


def use_openblas():
    """MLX's Linux CPU wheel bundles the reference BLAS (5.5 GFLOP/s for a 4096x256x4096 f32
    product on a Zen 4 core pair, against 125 with OpenBLAS): re-run this script with Debian's
    OpenBLAS (package libopenblas0-pthread) preloaded, on a fixed thread count so that its
    sums are ordered the same on every run."""
    if os.environ.get("MOEX_FIXTURE_BLAS") == "1":
        return
    if not os.path.exists(OPENBLAS):
        sys.exit(f"{OPENBLAS} missing: apt-get install libopenblas0-pthread (training with "
                 "MLX's bundled reference BLAS would take hours)")
    env = dict(os.environ, LD_PRELOAD=OPENBLAS, OPENBLAS_NUM_THREADS="2",
               MOEX_FIXTURE_BLAS="1")
    os.execve(sys.executable, [sys.executable] + sys.argv, env)


def main():
    use_openblas()
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=200, help="optimizer steps of %d tokens" % (BATCH * SEQ))
    ap.add_argument("--sdist", default="", help=f"path to {SDIST} (default: pip download)")
    ap.add_argument("--probe", action="store_true", help="time 5 steps and exit")
    ap.add_argument("--family", choices=sorted(FAMILIES), default="qwen3_moe")
    ap.add_argument("--mtp", action="store_true",
                    help="with --family glm4_moe: train a multi-token-prediction layer jointly")
    a = ap.parse_args()
    global CONFIG
    CONFIG = FAMILIES[a.family]
    glm = a.family == "glm4_moe"
    if a.mtp and not glm:
        sys.exit("--mtp needs --family glm4_moe")
    if a.mtp:
        CONFIG = dict(CONFIG, num_nextn_predict_layers=1)

    import mlx.core as mx
    import mlx.nn as nn
    import mlx.optimizers as optim
    mx.set_default_device(mx.cpu)
    mx.random.seed(SEED)
    np.random.seed(SEED)

    work = tempfile.mkdtemp(prefix="moex-fixture-")
    sdist = a.sdist or fetch_sdist(work)
    files = corpus_files(sdist)
    train = [t for i, (_, t) in enumerate(files) if i % 20 != 7]
    held = [(n, t) for i, (n, t) in enumerate(files) if i % 20 == 7]
    os.makedirs(a.out, exist_ok=True)
    tok = train_tokenizer(train, os.path.join(a.out, "tokenizer.json"))
    train_ids = encode(tok, train)
    held_ids = encode(tok, [t for _, t in held])
    print(f"corpus: {len(files)} files, train {len(train)} files {train_ids.size} tokens, "
          f"held-out {len(held)} files {held_ids.size} tokens", flush=True)

    model, recorded, block_class = build_glm_model(mx, nn) if glm else build_model(mx, nn)
    if a.mtp:
        import fixture_mtp
        fixture_mtp.attach(mx, model, model.args)
    parts = []  # with --mtp: the main and MTP losses of the last step
    reference_call = block_class.__call__
    # The dense block must compute mlx-lm's function: compare on a batch before training.
    probe = mx.array(train_ids[:SEQ][None])
    want = model(probe)
    dense = dense_glm_call if glm else dense_moe_call
    block_class.__call__ = lambda self, x: dense(mx, self, x, recorded)
    got = model(probe)
    recorded.clear()
    diff = mx.max(mx.abs(want - got)).item()
    print(f"dense MoE block vs mlx-lm's: max |logit difference| {diff:.2e}", flush=True)
    if diff > 1e-4:
        sys.exit("the dense MoE block does not compute mlx-lm's function")
    from mlx.utils import tree_flatten
    nparams = sum(v.size for _, v in tree_flatten(model.parameters()))
    print(f"model: {nparams} parameters", flush=True)
    e = CONFIG["n_routed_experts" if glm else "num_experts"]
    k = CONFIG["num_experts_per_tok"]
    coef = CONFIG.get("router_aux_loss_coef", 0.0)

    def loss_fn(model, x, y):
        recorded.clear()
        if a.mtp:
            return fixture_mtp.joint_loss(mx, nn, model, x, y, parts)
        logits = model(x)
        ce = nn.losses.cross_entropy(logits.astype(mx.float32), y, reduction="mean")
        if glm:
            return ce
        aux = sum(balance_loss(mx, r, k, e) for r in recorded) / len(recorded)
        z = sum(mx.mean(mx.logsumexp(r.astype(mx.float32), axis=-1) ** 2) for r in recorded)
        return ce + coef * aux + Z_LOSS * z / len(recorded)

    total_steps = a.steps
    warm = 20
    peak_lr = 2e-3

    def lr_at(step):
        if step < warm:
            return peak_lr * (step + 1) / warm
        return peak_lr * max(0.1, 0.5 * (1 + math.cos(math.pi * min(1.0, step / total_steps))))

    opt = optim.AdamW(learning_rate=peak_lr, weight_decay=0.01)
    grad_fn = nn.value_and_grad(model, loss_fn)
    rng = np.random.default_rng(SEED)
    starts_max = train_ids.size - SEQ - 1
    t0 = time.time()
    step = 0
    log = []
    while step < total_steps:
        starts = rng.integers(0, starts_max, size=BATCH)
        x = np.stack([train_ids[s:s + SEQ] for s in starts])
        y = np.stack([train_ids[s + 1:s + SEQ + 1] for s in starts])
        opt.learning_rate = lr_at(step)
        loss, grads = grad_fn(model, mx.array(x), mx.array(y))
        opt.update(model, grads)
        mx.eval(model.parameters(), opt.state, loss, *parts)
        if glm:
            update_bias(mx, model, recorded, e, k)
            mx.eval(model.parameters())
        step += 1
        el = time.time() - t0
        if step % 10 == 0 or a.probe:
            used = (" ".join(f"{len(np.unique(np.array(r)))}/{e}" for r in recorded) if glm
                    else routing_summary(mx, recorded, k, e))
            split = (f" (main {parts[0].item():.4f}, mtp {parts[1].item():.4f})" if parts
                     else "")
            print(f"step {step} loss {loss.item():.4f}{split} {el:.1f}s experts used {used}",
                  flush=True)
            log.append({"step": step, "loss": round(loss.item(), 5), "seconds": round(el, 1)})
            if parts:
                log[-1].update(main_loss=round(parts[0].item(), 5),
                               mtp_loss=round(parts[1].item(), 5))
        if a.probe and step == 5:
            return
    seconds = time.time() - t0
    print(f"trained {step} steps in {seconds:.0f}s", flush=True)
    finish(a, mx, model, recorded, reference_call, block_class, tok, train_ids, held, held_ids,
           {"steps": step, "tokens_per_step": BATCH * SEQ, "seconds": round(seconds, 1),
            "loss_log": log, "parameters": int(nparams)})


def routing_summary(mx, recorded, k, e):
    """Per layer, the experts the last batch selected and the router's mean entropy."""
    out = []
    for r in recorded:
        probs = mx.softmax(r.reshape(-1, e).astype(mx.float32), axis=-1)
        top = np.array(mx.argpartition(-probs, kth=k - 1, axis=-1)[:, :k])
        ent = -mx.sum(probs * mx.log(probs + 1e-30), axis=-1).mean().item()
        out.append(f"{len(np.unique(top))}/{e} H={ent:.2f}")
    return " ".join(out)


def heldout_loss(mx, nn, model, ids):
    """Mean next-token loss (nats) over non-overlapping SEQ windows of the held-out ids."""
    total, count = 0.0, 0
    for s in range(0, ids.size - SEQ - 1, SEQ):
        x = mx.array(ids[s:s + SEQ][None])
        y = mx.array(ids[s + 1:s + SEQ + 1][None])
        total += nn.losses.cross_entropy(model(x), y, reduction="sum").item()
        count += SEQ
    return total / count


def unigram_loss(train_ids, ids):
    """Held-out loss of the training text's unigram distribution (add-one smoothed)."""
    counts = np.bincount(train_ids, minlength=VOCAB).astype(np.float64) + 1.0
    logp = np.log(counts / counts.sum())
    return float(-logp[ids].mean())


def hf_weights(mx, model):
    """mlx-lm's parameters renamed to the Hugging Face layout (per-expert tensors), bf16; the
    MTP layer (model.mtp) as model.layers.N with its copies of the embedding and head."""
    from mlx.utils import tree_flatten
    out = {}
    n = CONFIG["num_hidden_layers"]
    for name, v in tree_flatten(model.parameters()):
        if name.startswith("mtp."):
            import fixture_mtp
            name = fixture_mtp.rename(name, n)
        if ".mlp.switch_mlp." in name:
            head, proj = name.split(".mlp.switch_mlp.")
            proj = proj.split(".")[0]
            for e in range(v.shape[0]):
                out[f"{head}.mlp.experts.{e}.{proj}.weight"] = v[e].astype(mx.bfloat16)
        elif name.endswith("e_score_correction_bias"):
            out[name] = v.astype(mx.float32)  # as GLM-4.5 and DeepSeek-V3 ship it
        else:
            out[name] = v.astype(mx.bfloat16)
    if "mtp" in model:
        import fixture_mtp
        fixture_mtp.add_copies(out, n)
    return out


def finish(a, mx, model, recorded, reference_call, block_class, tok, train_ids, held, held_ids,
           report):
    import mlx.nn as nn
    block_class.__call__ = reference_call  # evaluate with mlx-lm's own block
    weights = hf_weights(mx, model)
    mx.save_safetensors(os.path.join(a.out, "model.safetensors"), weights,
                        metadata={"format": "pt"})
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(CONFIG, f, indent=2)
    with open(os.path.join(a.out, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|endoftext|>",
                   "pad_token": "<|endoftext|>", "bos_token": None,
                   "model_max_length": CONFIG["max_position_embeddings"]}, f, indent=2)
    with open(os.path.join(a.out, "heldout.txt"), "w") as f:
        f.write("\n\n".join(t for _, t in held))
    # Evaluate the saved (bf16) weights, as users will run them.
    from mlx_lm.utils import load
    saved, _ = load(a.out)
    saved.set_dtype(mx.float32)
    report["heldout_loss_nats"] = round(heldout_loss(mx, nn, saved, held_ids), 5)
    report["unigram_heldout_loss_nats"] = round(unigram_loss(train_ids, held_ids), 5)
    if a.mtp:
        import fixture_mtp
        report["mtp"] = dict(fixture_mtp.heldout_accuracy(mx, a.out, held_ids, SEQ),
                             loss_weight=fixture_mtp.MTP_WEIGHT)
    report["heldout_files"] = [n for n, _ in held]
    report["corpus"] = {"sdist": SDIST, "sha256": SDIST_SHA256, "licence": "BSD-3-Clause",
                        "files": "docs/**/*.txt, every 20th sorted file (index % 20 == 7) held out",
                        "train_tokens": int(train_ids.size), "heldout_tokens": int(held_ids.size)}
    import importlib.metadata as md
    report["versions"] = {p: md.version(p) for p in ("mlx", "mlx-lm", "tokenizers", "numpy")}
    report["seed"] = SEED
    report["sha256"] = {n: hashlib.sha256(open(os.path.join(a.out, n), "rb").read()).hexdigest()
                        for n in ("model.safetensors", "tokenizer.json", "heldout.txt")}
    with open(os.path.join(a.out, "training_report.json"), "w") as f:
        json.dump(report, f, indent=2)
    print(json.dumps({k: report[k] for k in ("heldout_loss_nats", "unigram_heldout_loss_nats",
                                              "steps", "seconds", "mtp") if k in report}),
          flush=True)


if __name__ == "__main__":
    main()
