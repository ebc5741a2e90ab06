"""The multi-token-prediction (MTP) module of the glm4_moe fixture (train_fixture.py --mtp):
built, trained jointly with the main model as DeepSeek-V3 trains its MTP (arXiv 2412.19437,
section 2.2: one module of depth 1, loss weight 0.3; the module shares the main embedding and
output head), and measured on the saved checkpoint with the oracle forward of
src/generate/reference/mtp_module.py.

Row p of a training window (p = 0..SEQ-2) sees the main model's final-norm hidden state at p
and the embedding of token p+1 (zeros at p == 0, as vLLM masks position 0), and predicts token
p+2.
"""
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "generate", "reference"))
import mtp_module  # noqa: E402

MTP_WEIGHT = 0.3  # DeepSeek-V3's lambda for the first part of training


def attach(mx, model, args):
    """Adds model.mtp: the family's decoder layer plus enorm, hnorm, eh_proj and
    shared_head.norm (no embedding or head of its own while training). Its router is
    initialized and its correction bias frozen as build_glm_model does for the main layers."""
    layer = mtp_module.mtp_layer_class(args.model_type)(args, args.num_hidden_layers,
                                                        with_embed=False, with_head=False)
    gate = layer.mlp.gate
    bound = 1.0 / math.sqrt(args.hidden_size)
    gate.weight = mx.random.uniform(-bound, bound, gate.weight.shape)
    gate.freeze(keys=["e_score_correction_bias"])
    model.mtp = layer
    return layer


def mtp_logits(mx, model, hidden, x):
    """Logits of rows 0..S-2 of windows x [B, S] given the main hidden states [B, S, H]."""
    emb = mtp_module.next_embeddings(model.model.embed_tokens, x[:, 1:], 0)
    mask = mtp_module.create_attention_mask(emb, None, return_array=True)
    return model.mtp.predict(emb, hidden[:, :-1], mask, None, head=model.lm_head)


def joint_loss(mx, nn, model, x, y, parts):
    """Main cross-entropy + MTP_WEIGHT x the MTP's (targets y[:, 1:] = token p+2); the two
    losses are appended to `parts` for the log."""
    hidden = model.model(x)
    ce = nn.losses.cross_entropy(model.lm_head(hidden).astype(mx.float32), y, reduction="mean")
    logits = mtp_logits(mx, model, hidden, x)
    mtp_ce = nn.losses.cross_entropy(logits.astype(mx.float32), y[:, 1:], reduction="mean")
    parts[:] = [ce, mtp_ce]
    return ce + MTP_WEIGHT * mtp_ce


def rename(name, n):
    """model.mtp.* -> the checkpoint's model.layers.N.*"""
    return f"model.layers.{n}." + name[len("mtp."):] if name.startswith("mtp.") else name


def add_copies(out, n):
    """The MTP layer's own embed_tokens and shared_head.head, copies of the shared tensors,
    as GLM-4.5's checkpoints store them."""
    out[f"model.layers.{n}.embed_tokens.weight"] = out["model.embed_tokens.weight"]
    out[f"model.layers.{n}.shared_head.head.weight"] = out["lm_head.weight"]


def heldout_accuracy(mx, model_dir, ids, seq):
    """Top-1 accuracies on non-overlapping `seq` windows of the held-out ids, with the oracle
    loading the saved checkpoint (float32): the main model's next token, and the MTP's token
    after next; plus the MTP's held-out loss (nats)."""
    main, layer, _ = mtp_module.load(model_dir)
    embed, head = mtp_module.embed_and_head(main, layer)
    hits_main = hits_mtp = n_main = n_mtp = windows = 0
    loss = 0.0
    for s in range(0, ids.size - seq - 1, seq):
        x = mx.array(ids[s:s + seq][None])
        y = mx.array(ids[s + 1:s + seq + 1][None])
        hidden = main.model(x)
        emb = mtp_module.next_embeddings(embed, x[:, 1:], 0)
        mask = mtp_module.create_attention_mask(emb, None, return_array=True)
        logits = layer.predict(emb, hidden[:, :-1], mask, None, head)
        hits_main += mx.sum(mx.argmax(main.lm_head(hidden), axis=-1) == y).item()
        hits_mtp += mx.sum(mx.argmax(logits, axis=-1) == y[:, 1:]).item()
        loss += mx.sum(mx.logsumexp(logits, axis=-1) -
                       mx.take_along_axis(logits, y[:, 1:, None], axis=-1)[..., 0]).item()
        n_main += seq
        n_mtp += seq - 1
        windows += 1
    return {"main_heldout_top1": round(hits_main / n_main, 5),
            "mtp_heldout_top1": round(hits_mtp / n_mtp, 5),
            "mtp_heldout_loss_nats": round(loss / n_mtp, 5),
            "heldout_windows": windows}
