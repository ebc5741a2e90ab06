"""The GGUF seeds of make_corpus.py: small files for fuzz_gguf (every value type, quantized
tensor types, alignment, split parts) and whole tiny models for fuzz_gguf_model (qwen3moe,
Mixtral, deepseek2 as V2 and as V3, gpt-oss, dots1, ernie4_5-moe (also with exp_probs_b),
granitemoe, hunyuan-moe, lfm2moe, llama4, minimax-m2, bailingmoe, qwen3next, qwen35moe,
nemotron_h_moe) that moex loads, written byte by byte.
"""
import struct


# GGUF files written by hand (the fuzz build's Python need not have gguf-py): value type
# ids, ggml type ids and (elements, bytes) per block of the types used.
GGUF_TYPES = {"F32": (0, 1, 4), "F16": (1, 1, 2), "Q4_0": (2, 32, 18), "Q8_0": (8, 32, 34),
              "Q4_K": (12, 256, 144), "Q6_K": (14, 256, 210), "BF16": (30, 1, 2),
              "MXFP4": (39, 32, 17), "IQ4_XS": (23, 256, 136)}


def gguf_value(vtype, val):
    """Bytes of one GGUF value of type id vtype (arrays: (element type, list))."""
    if vtype == 8:
        b = val.encode()
        return struct.pack("<Q", len(b)) + b
    if vtype == 9:
        sub, items = val
        return struct.pack("<IQ", sub, len(items)) + b"".join(gguf_value(sub, v) for v in items)
    return struct.pack("<" + {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?",
                              10: "Q", 11: "q", 12: "d"}[vtype], val)


def gguf_file(kvs, tensors, rng, alignment=32):
    """kvs: [(key, type id, value)]; tensors: [(name, type name, ne list)]; the data is random
    bytes, except MXFP4 blocks, whose E8M0 byte is kept in [100, 140) (255, a NaN scale to
    moex, would make the file one that moex refuses)."""
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for key, vtype, val in kvs:
        out += gguf_value(8, key) + struct.pack("<I", vtype) + gguf_value(vtype, val)
    offset, sizes = 0, []
    for name, tname, ne in tensors:
        tid, block, size = GGUF_TYPES[tname]
        n = 1
        for d in ne:
            n *= d
        nbytes = n // block * size
        out += gguf_value(8, name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", d) for d in ne)
        out += struct.pack("<IQ", tid, offset)
        sizes.append((nbytes, tname))
        offset += -(-nbytes // alignment) * alignment
    out += b"\0" * (-len(out) % alignment)
    for nbytes, tname in sizes:
        data = bytearray(rng.randrange(256) for _ in range(nbytes))
        if tname == "MXFP4":
            data[::17] = bytes(rng.randrange(100, 140) for _ in range(nbytes // 17))
        out += bytes(data) + b"\0" * (-nbytes % alignment)
    return out


def gguf_inputs(out_dir, rng, write):
    kvs = [("general.architecture", 8, "qwen3moe"), ("general.name", 8, "tiny"),
           ("qwen3moe.block_count", 4, 2), ("qwen3moe.rope.freq_base", 6, 1e6),
           ("qwen3moe.expert_count", 4, 8), ("general.file_type", 4, 15),
           ("tokenizer.ggml.tokens", 9, (8, ["<s>", "a", "\u0120b", "\u00e9"])),
           ("tokenizer.ggml.scores", 9, (6, [0.0, -1.5, -2.0, -3.25])),
           ("tokenizer.ggml.token_type", 9, (5, [3, 1, 1, 1])),
           ("t.flags", 9, (7, [True, False])), ("t.u64", 10, 2 ** 40), ("t.i8", 1, -3),
           ("t.f64", 12, 0.125), ("t.nested", 9, (9, [(4, [1, 2]), (8, ["x"])]))]
    dense = [("token_embd.weight", "Q4_K", [256, 4]), ("output_norm.weight", "F32", [16]),
             ("blk.0.attn_q.weight", "Q8_0", [64, 2]), ("blk.0.ffn_down_exps.weight", "MXFP4", [32, 2, 2]),
             ("blk.0.ffn_up_exps.weight", "Q6_K", [256, 1, 2]), ("blk.0.attn_norm.weight", "BF16", [8]),
             ("blk.0.ffn_gate.weight", "Q4_0", [32, 3]), ("blk.1.attn_k.weight", "F16", [4, 4]),
             ("blk.1.ffn_gate_exps.weight", "IQ4_XS", [256, 1])]
    write(out_dir, "fuzz_gguf", "model.gguf", gguf_file(kvs, dense, rng))
    write(out_dir, "fuzz_gguf", "model-align64.gguf",
          gguf_file(kvs + [("general.alignment", 4, 64)], dense[:4], rng, alignment=64))
    write(out_dir, "fuzz_gguf", "metadata-only.gguf", gguf_file(kvs, [], rng))
    write(out_dir, "fuzz_gguf", "split-part.gguf",
          gguf_file([("split.no", 2, 0), ("split.count", 2, 2), ("split.tensors.count", 5, 2)],
                    dense[1:2], rng))
    write(out_dir, "fuzz_gguf", "empty.gguf", gguf_file([], [], rng))


def gguf_model_inputs(out_dir, rng, write):
    """Whole tiny models: a 1-layer qwen3moe and a 1-layer Mixtral (llama with experts), hidden
    32, 2 heads of 16, 4 experts top 2, with a byte-level BPE vocabulary of 16 tokens and a chat
    template, so that every loader of fuzz_gguf_model starts from a file it accepts."""
    tokens = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "a", "b", "c", "\u0120", "\u0120a",
              "ab", "abc", "1", "2", ",", "!", "\u010a", "H"]
    vocab = len(tokens)
    tok_kvs = [("tokenizer.ggml.model", 8, "gpt2"), ("tokenizer.ggml.pre", 8, "qwen2"),
               ("tokenizer.ggml.tokens", 9, (8, tokens)),
               ("tokenizer.ggml.token_type", 9, (5, [3, 3, 3] + [1] * (vocab - 3))),
               ("tokenizer.ggml.merges", 9, (8, ["\u0120 a", "a b", "ab c"])),
               ("tokenizer.ggml.eos_token_id", 4, 2), ("tokenizer.ggml.bos_token_id", 4, 0),
               ("tokenizer.chat_template", 8,
                "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n"
                "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")]
    for arch, moe_key, extra in (
            ("qwen3moe", "expert_feed_forward_length", [("qwen3moe.attention.key_length", 4, 16)]),
            ("llama", "feed_forward_length", [])):
        kvs = [("general.architecture", 8, arch), (f"{arch}.block_count", 4, 1),
               (f"{arch}.context_length", 4, 256), (f"{arch}.embedding_length", 4, 32),
               (f"{arch}.attention.head_count", 4, 2), (f"{arch}.attention.head_count_kv", 4, 1),
               (f"{arch}.attention.layer_norm_rms_epsilon", 6, 1e-6),
               (f"{arch}.rope.freq_base", 6, 10000.0), (f"{arch}.expert_count", 4, 4),
               (f"{arch}.expert_used_count", 4, 2), (f"{arch}.{moe_key}", 4, 16)] + extra + tok_kvs
        t = [("token_embd.weight", "F16", [32, vocab]), ("output_norm.weight", "F32", [32]),
             ("output.weight", "Q8_0", [32, vocab]), ("blk.0.attn_norm.weight", "F32", [32]),
             ("blk.0.ffn_norm.weight", "F32", [32]), ("blk.0.attn_q.weight", "Q8_0", [32, 32]),
             ("blk.0.attn_k.weight", "Q8_0", [32, 16]), ("blk.0.attn_v.weight", "Q8_0", [32, 16]),
             ("blk.0.attn_output.weight", "Q8_0", [32, 32]),
             ("blk.0.ffn_gate_inp.weight", "F32", [32, 4]),
             ("blk.0.ffn_gate_exps.weight", "Q8_0", [32, 16, 4]),
             ("blk.0.ffn_up_exps.weight", "Q8_0", [32, 16, 4]),
             ("blk.0.ffn_down_exps.weight", "F16", [16, 32, 4])]
        if arch == "qwen3moe":
            t += [("blk.0.attn_q_norm.weight", "F32", [16]), ("blk.0.attn_k_norm.weight", "F32", [16])]
        write(out_dir, "fuzz_gguf_model", f"{arch}-tiny.gguf", gguf_file(kvs, t, rng))
    write(out_dir, "fuzz_gguf_model", "deepseek2-tiny.gguf",
          gguf_file(deepseek2_keys() + tok_kvs, deepseek2_tensors(vocab), rng))
    write(out_dir, "fuzz_gguf_model", "deepseek2-v3-tiny.gguf",
          gguf_file(deepseek_v3_keys() + tok_kvs, deepseek_v3_tensors(vocab), rng))
    write(out_dir, "fuzz_gguf_model", "gpt-oss-tiny.gguf",
          gguf_file(gpt_oss_keys() + tok_kvs, gpt_oss_tensors(vocab), rng))
    write(out_dir, "fuzz_gguf_model", "dots1-tiny.gguf",
          gguf_file(dots1_keys() + tok_kvs, dots1_tensors(vocab), rng))
    for arch, keys, tensors in (("ernie4_5-moe", ernie_keys(), ernie_tensors(vocab)),
                                ("granitemoe", granite_keys(), granite_tensors(vocab)),
                                ("hunyuan-moe", hunyuan_keys(), hunyuan_tensors(vocab)),
                                ("lfm2moe", lfm2_keys(), lfm2_tensors(vocab)),
                                ("llama4", llama4_keys(), llama4_tensors(vocab)),
                                ("minimax-m2", minimax_keys(), minimax_tensors(vocab)),
                                ("bailingmoe", bailing_keys(), bailing_tensors(vocab)),
                                ("qwen3next", qwen3next_keys(), qwen3next_tensors(vocab)),
                                ("qwen35moe", qwen35moe_keys(), qwen35moe_tensors(vocab)),
                                ("nemotron_h_moe", nemotron_keys(), nemotron_tensors(vocab))):
        write(out_dir, "fuzz_gguf_model", f"{arch}-tiny.gguf",
              gguf_file(keys + tok_kvs, tensors, rng))
    # ERNIE with the correction bias as the converter writes it ([1, E]).
    write(out_dir, "fuzz_gguf_model", "ernie4_5-moe-bias-tiny.gguf",
          gguf_file(ernie_keys() + tok_kvs,
                    ernie_tensors(vocab) + [("blk.0.exp_probs_b.bias", "F32", [4, 1])], rng))


def deepseek2_keys():
    """A 1-layer DeepSeek-V2-Lite in llama.cpp's MLA layout: hidden 32, 2 heads, latent 32,
    nope 16 + rope 16, v 16, 4 experts top 2 and a shared one, YaRN."""
    a = "deepseek2"
    return [("general.architecture", 8, a), (f"{a}.block_count", 4, 1),
            (f"{a}.context_length", 4, 256), (f"{a}.embedding_length", 4, 32),
            (f"{a}.attention.head_count", 4, 2), (f"{a}.attention.head_count_kv", 4, 1),
            (f"{a}.attention.layer_norm_rms_epsilon", 6, 1e-6), (f"{a}.rope.freq_base", 6, 1e4),
            (f"{a}.expert_count", 4, 4), (f"{a}.expert_used_count", 4, 2),
            (f"{a}.expert_feed_forward_length", 4, 16), (f"{a}.expert_shared_count", 4, 1),
            (f"{a}.leading_dense_block_count", 4, 0), (f"{a}.attention.kv_lora_rank", 4, 32),
            (f"{a}.attention.key_length", 4, 48), (f"{a}.attention.value_length", 4, 32),
            (f"{a}.attention.key_length_mla", 4, 32), (f"{a}.attention.value_length_mla", 4, 16),
            (f"{a}.rope.dimension_count", 4, 16), (f"{a}.expert_gating_func", 4, 1),
            (f"{a}.rope.scaling.type", 8, "yarn"), (f"{a}.rope.scaling.factor", 6, 4.0),
            (f"{a}.rope.scaling.original_context_length", 4, 64),
            (f"{a}.rope.scaling.yarn_log_multiplier", 6, 0.0707)]


def deepseek2_tensors(vocab):
    b = "blk.0."
    return [("token_embd.weight", "F16", [32, vocab]), ("output_norm.weight", "F32", [32]),
            ("output.weight", "Q8_0", [32, vocab]), (b + "attn_norm.weight", "F32", [32]),
            (b + "ffn_norm.weight", "F32", [32]), (b + "attn_q.weight", "Q8_0", [32, 64]),
            (b + "attn_kv_a_mqa.weight", "Q8_0", [32, 48]),
            (b + "attn_kv_a_norm.weight", "F32", [32]), (b + "attn_k_b.weight", "F16", [16, 32, 2]),
            (b + "attn_v_b.weight", "Q8_0", [32, 16, 2]),
            (b + "attn_output.weight", "Q8_0", [32, 32]),
            (b + "ffn_gate_inp.weight", "F32", [32, 4]),
            (b + "ffn_gate_exps.weight", "Q8_0", [32, 16, 4]),
            (b + "ffn_up_exps.weight", "Q8_0", [32, 16, 4]),
            (b + "ffn_down_exps.weight", "F16", [16, 32, 4]),
            (b + "ffn_gate_shexp.weight", "Q8_0", [32, 16]),
            (b + "ffn_up_shexp.weight", "Q8_0", [32, 16]),
            (b + "ffn_down_shexp.weight", "F16", [16, 32])]


def deepseek_v3_keys():
    """The 1-layer deepseek2 above as DeepSeek-V3 (moex's deepseek_v3 family): sigmoid gating,
    the 4 experts in 2 groups (1 kept), renormalized top 2 scaled 2.5."""
    a = "deepseek2"
    keys = [kv for kv in deepseek2_keys() if kv[0] != f"{a}.expert_gating_func"]
    return keys + [(f"{a}.expert_gating_func", 4, 2), (f"{a}.expert_weights_norm", 7, True),
                   (f"{a}.expert_weights_scale", 6, 2.5), (f"{a}.expert_group_count", 4, 2),
                   (f"{a}.expert_group_used_count", 4, 1)]


def deepseek_v3_tensors(vocab):
    return deepseek2_tensors(vocab) + [("blk.0.exp_probs_b.bias", "F32", [4])]


def gpt_oss_keys():
    """A 2-layer gpt-oss (sliding then full): hidden 32, 2 heads of 16 (1 KV head), 4 experts of
    32 top 2 in MXFP4, sinks, biases, YaRN."""
    a = "gpt-oss"
    return [("general.architecture", 8, a), (f"{a}.block_count", 4, 2),
            (f"{a}.context_length", 4, 256), (f"{a}.embedding_length", 4, 32),
            (f"{a}.attention.head_count", 4, 2), (f"{a}.attention.head_count_kv", 4, 1),
            (f"{a}.attention.key_length", 4, 16), (f"{a}.attention.value_length", 4, 16),
            (f"{a}.attention.layer_norm_rms_epsilon", 6, 1e-5), (f"{a}.rope.freq_base", 6, 1.5e5),
            (f"{a}.expert_count", 4, 4), (f"{a}.expert_used_count", 4, 2),
            (f"{a}.expert_feed_forward_length", 4, 32), (f"{a}.attention.sliding_window", 4, 8),
            (f"{a}.rope.scaling.type", 8, "yarn"), (f"{a}.rope.scaling.factor", 6, 32.0),
            (f"{a}.rope.scaling.original_context_length", 4, 64)]


def gpt_oss_tensors(vocab):
    t = [("token_embd.weight", "F16", [32, vocab]), ("output_norm.weight", "F32", [32]),
         ("output.weight", "Q8_0", [32, vocab])]
    for i in range(2):
        b = f"blk.{i}."
        t += [(b + "attn_norm.weight", "F32", [32]),
              (b + "post_attention_norm.weight", "F32", [32]),
              (b + "attn_q.weight", "Q8_0", [32, 32]), (b + "attn_q.bias", "F32", [32]),
              (b + "attn_k.weight", "Q8_0", [32, 16]), (b + "attn_k.bias", "F32", [16]),
              (b + "attn_v.weight", "Q8_0", [32, 16]), (b + "attn_v.bias", "F32", [16]),
              (b + "attn_output.weight", "Q8_0", [32, 32]), (b + "attn_output.bias", "F32", [32]),
              (b + "attn_sinks.weight", "F32", [2]), (b + "ffn_gate_inp.weight", "F32", [32, 4]),
              (b + "ffn_gate_inp.bias", "F32", [4])]
        for proj in ("gate", "up", "down"):
            t += [(b + f"ffn_{proj}_exps.weight", "MXFP4", [32, 32, 4]),
                  (b + f"ffn_{proj}_exps.bias", "F32", [32, 4])]
    return t


def dots1_keys():
    """A 1-layer dots.llm1 (MoE): hidden 32, 2 heads of 16 (MHA, as llama.cpp's dots1), 4
    experts of 16 in 2 groups (1 kept) top 2, 1 shared expert, sigmoid + exp_probs_b."""
    a = "dots1"
    return [("general.architecture", 8, a), (f"{a}.block_count", 4, 1),
            (f"{a}.context_length", 4, 256), (f"{a}.embedding_length", 4, 32),
            (f"{a}.attention.head_count", 4, 2), (f"{a}.attention.head_count_kv", 4, 2),
            (f"{a}.attention.layer_norm_rms_epsilon", 6, 1e-5), (f"{a}.rope.freq_base", 6, 1e7),
            (f"{a}.expert_count", 4, 4), (f"{a}.expert_used_count", 4, 2),
            (f"{a}.feed_forward_length", 4, 64), (f"{a}.expert_feed_forward_length", 4, 16),
            (f"{a}.expert_shared_count", 4, 1), (f"{a}.leading_dense_block_count", 4, 0),
            (f"{a}.expert_gating_func", 4, 2), (f"{a}.expert_weights_scale", 6, 2.5),
            (f"{a}.expert_weights_norm", 7, True), (f"{a}.expert_group_count", 4, 2),
            (f"{a}.expert_group_used_count", 4, 1)]


def dots1_tensors(vocab):
    b = "blk.0."
    return [("token_embd.weight", "F16", [32, vocab]), ("output_norm.weight", "F32", [32]),
            ("output.weight", "Q8_0", [32, vocab]), (b + "attn_norm.weight", "F32", [32]),
            (b + "ffn_norm.weight", "F32", [32]), (b + "attn_q.weight", "Q8_0", [32, 32]),
            (b + "attn_k.weight", "Q8_0", [32, 32]), (b + "attn_v.weight", "Q8_0", [32, 32]),
            (b + "attn_output.weight", "Q8_0", [32, 32]),
            (b + "attn_q_norm.weight", "F32", [16]), (b + "attn_k_norm.weight", "F32", [16]),
            (b + "ffn_gate_inp.weight", "F32", [32, 4]), (b + "exp_probs_b.bias", "F32", [4]),
            (b + "ffn_gate_exps.weight", "Q8_0", [32, 16, 4]),
            (b + "ffn_up_exps.weight", "Q8_0", [32, 16, 4]),
            (b + "ffn_down_exps.weight", "F16", [16, 32, 4]),
            (b + "ffn_gate_shexp.weight", "Q8_0", [32, 16]),
            (b + "ffn_up_shexp.weight", "Q8_0", [32, 16]),
            (b + "ffn_down_shexp.weight", "F16", [16, 32])]


def plain_keys(a, extra):
    """hidden 32, 2 heads of 16 (1 KV head), 4 experts top 2, one layer."""
    return [("general.architecture", 8, a), (f"{a}.block_count", 4, 1),
            (f"{a}.context_length", 4, 256), (f"{a}.embedding_length", 4, 32),
            (f"{a}.attention.head_count", 4, 2), (f"{a}.attention.head_count_kv", 4, 1),
            (f"{a}.attention.layer_norm_rms_epsilon", 6, 1e-5), (f"{a}.expert_count", 4, 4),
            (f"{a}.expert_used_count", 4, 2)] + [(f"{a}.{k}", t, v) for k, t, v in extra]


def moe_layer_tensors(bias=False):
    b = "blk.0."
    t = [(b + "attn_norm.weight", "F32", [32]), (b + "ffn_norm.weight", "F32", [32]),
         (b + "attn_q.weight", "Q8_0", [32, 32]), (b + "attn_k.weight", "Q8_0", [32, 16]),
         (b + "attn_v.weight", "Q8_0", [32, 16]), (b + "attn_output.weight", "Q8_0", [32, 32]),
         (b + "ffn_gate_inp.weight", "F32", [32, 4]),
         (b + "ffn_gate_exps.weight", "Q8_0", [32, 16, 4]),
         (b + "ffn_up_exps.weight", "Q8_0", [32, 16, 4]),
         (b + "ffn_down_exps.weight", "F16", [16, 32, 4])]
    if bias:
        t += [(b + "attn_q.bias", "F32", [32]), (b + "attn_k.bias", "F32", [16]),
              (b + "attn_v.bias", "F32", [16]), (b + "attn_output.bias", "F32", [32])]
    return t


def ernie_keys():
    """A 1-layer ERNIE-4.5 MoE (tied embeddings) with 1 shared expert."""
    return plain_keys("ernie4_5-moe", [
        ("feed_forward_length", 4, 64), ("expert_feed_forward_length", 4, 16),
        ("expert_shared_count", 4, 1), ("expert_shared_feed_forward_length", 4, 16),
        ("interleave_moe_layer_step", 4, 1), ("leading_dense_block_count", 4, 0)])


def ernie_tensors(vocab):
    return [("token_embd.weight", "F16", [32, vocab]), ("output_norm.weight", "F32", [32])] + \
        moe_layer_tensors() + [("blk.0.ffn_gate_shexp.weight", "Q8_0", [32, 16]),
                               ("blk.0.ffn_up_shexp.weight", "Q8_0", [32, 16]),
                               ("blk.0.ffn_down_shexp.weight", "F16", [16, 32])]


def granite_keys():
    """A 1-layer Granite MoE with the muP multipliers and q/k/v/o biases."""
    return plain_keys("granitemoe", [
        ("feed_forward_length", 4, 16), ("attention.scale", 6, 0.1), ("embedding_scale", 6, 12.0),
        ("residual_scale", 6, 0.22), ("logit_scale", 6, 6.0)])


def granite_tensors(vocab):
    return [("token_embd.weight", "F16", [32, vocab]), ("output_norm.weight", "F32", [32]),
            ("output.weight", "Q8_0", [32, vocab])] + moe_layer_tensors(bias=True)


def hunyuan_keys():
    """A 1-layer Hunyuan-A13B: hidden 32, 2 heads of 16 (1 KV head), 4 experts of 16 top 2 and a
    shared MLP of 16, q/k norms, the NTK alpha already in the base, tied embeddings."""
    a = "hunyuan-moe"
    return [("general.architecture", 8, a), (f"{a}.block_count", 4, 1),
            (f"{a}.context_length", 4, 256), (f"{a}.embedding_length", 4, 32),
            (f"{a}.attention.head_count", 4, 2), (f"{a}.attention.head_count_kv", 4, 1),
            (f"{a}.attention.layer_norm_rms_epsilon", 6, 1e-5),
            (f"{a}.rope.freq_base", 6, 11158840.0), (f"{a}.rope.scaling.type", 8, "none"),
            (f"{a}.expert_count", 4, 4), (f"{a}.expert_used_count", 4, 2),
            (f"{a}.feed_forward_length", 4, 16), (f"{a}.expert_feed_forward_length", 4, 16),
            (f"{a}.expert_shared_feed_forward_length", 4, 16), (f"{a}.expert_shared_count", 4, 1)]


def hunyuan_tensors(vocab):
    b = "blk.0."
    return [("token_embd.weight", "Q8_0", [32, vocab]), ("output_norm.weight", "F32", [32]),
            (b + "attn_norm.weight", "F32", [32]), (b + "ffn_norm.weight", "F32", [32]),
            (b + "attn_q.weight", "Q8_0", [32, 32]), (b + "attn_k.weight", "Q8_0", [32, 16]),
            (b + "attn_v.weight", "Q8_0", [32, 16]), (b + "attn_output.weight", "Q8_0", [32, 32]),
            (b + "attn_q_norm.weight", "F32", [16]), (b + "attn_k_norm.weight", "F32", [16]),
            (b + "ffn_gate_inp.weight", "F32", [32, 4]),
            (b + "ffn_gate_exps.weight", "Q8_0", [32, 16, 4]),
            (b + "ffn_up_exps.weight", "Q8_0", [32, 16, 4]),
            (b + "ffn_down_exps.weight", "F16", [16, 32, 4]),
            (b + "ffn_gate_shexp.weight", "Q8_0", [32, 16]),
            (b + "ffn_up_shexp.weight", "Q8_0", [32, 16]),
            (b + "ffn_down_shexp.weight", "F16", [16, 32])]


def lfm2_keys():
    """A 2-layer LFM2-MoE: a short-convolution layer (kernel 3) with a dense FFN, then an
    attention layer with 4 experts top 2 (sigmoid + exp_probs_b); tied embeddings."""
    a = "lfm2moe"
    keys = [k for k in plain_keys(a, [
        ("feed_forward_length", 4, 64), ("expert_feed_forward_length", 4, 16),
        ("leading_dense_block_count", 4, 1), ("expert_gating_func", 4, 2),
        ("shortconv.l_cache", 4, 3)]) if k[0] not in (f"{a}.block_count",
                                                     f"{a}.attention.head_count_kv")]
    return keys + [(f"{a}.block_count", 4, 2), (f"{a}.attention.head_count_kv", 9, (5, [0, 1]))]


def lfm2_tensors(vocab):
    t = [("token_embd.weight", "F16", [32, vocab]), ("token_embd_norm.weight", "F32", [32]),
         ("blk.0.attn_norm.weight", "F32", [32]), ("blk.0.ffn_norm.weight", "F32", [32]),
         ("blk.0.shortconv.in_proj.weight", "Q8_0", [32, 96]),
         ("blk.0.shortconv.conv.weight", "F32", [3, 32]),
         ("blk.0.shortconv.out_proj.weight", "Q8_0", [32, 32]),
         ("blk.0.ffn_gate.weight", "Q8_0", [32, 64]), ("blk.0.ffn_up.weight", "Q8_0", [32, 64]),
         ("blk.0.ffn_down.weight", "Q8_0", [64, 32])]
    return t + [(n.replace("blk.0.", "blk.1."), ty, ne) for n, ty, ne in moe_layer_tensors()] + [
        ("blk.1.attn_q_norm.weight", "F32", [16]), ("blk.1.attn_k_norm.weight", "F32", [16]),
        ("blk.1.exp_probs_b.bias", "F32", [4])]


def llama4_keys():
    """A 2-layer Llama 4: a dense layer, then a MoE layer (interleave step 2) of 4 experts top 1
    with a shared expert; no rope_freqs (random bytes are no llama3 factors)."""
    a = "llama4"
    keys = [k for k in plain_keys(a, [
        ("feed_forward_length", 4, 64), ("expert_feed_forward_length", 4, 16),
        ("interleave_moe_layer_step", 4, 2), ("rope.freq_base", 6, 500000.0)])
            if k[0] not in (f"{a}.block_count", f"{a}.expert_used_count")]
    return keys + [(f"{a}.block_count", 4, 2), (f"{a}.expert_used_count", 4, 1)]


def llama4_tensors(vocab):
    t = [("token_embd.weight", "F16", [32, vocab]), ("output_norm.weight", "F32", [32]),
         ("output.weight", "Q8_0", [32, vocab])]
    for i in range(2):
        t += [(n.replace("blk.0.", f"blk.{i}."), ty, ne) for n, ty, ne in moe_layer_tensors()
              if i == 1 or "_exps" not in n and "gate_inp" not in n]
    return t + [("blk.0.ffn_gate.weight", "Q8_0", [32, 64]), ("blk.0.ffn_up.weight", "Q8_0", [32, 64]),
                ("blk.0.ffn_down.weight", "Q8_0", [64, 32]),
                ("blk.1.ffn_gate_shexp.weight", "Q8_0", [32, 16]),
                ("blk.1.ffn_up_shexp.weight", "Q8_0", [32, 16]),
                ("blk.1.ffn_down_shexp.weight", "F16", [16, 32])]


def minimax_keys():
    """A 1-layer MiniMax-M2: RoPE over 8 of 16 head dims, q/k norms over all heads, 4 experts
    top 2, sigmoid + exp_probs_b."""
    return plain_keys("minimax-m2", [
        ("feed_forward_length", 4, 16), ("expert_feed_forward_length", 4, 16),
        ("rope.dimension_count", 4, 8), ("expert_gating_func", 4, 2)])


def minimax_tensors(vocab):
    return [("token_embd.weight", "F16", [32, vocab]), ("output_norm.weight", "F32", [32]),
            ("output.weight", "Q8_0", [32, vocab])] + moe_layer_tensors() + [
        ("blk.0.attn_q_norm.weight", "F32", [32]), ("blk.0.attn_k_norm.weight", "F32", [16]),
        ("blk.0.exp_probs_b.bias", "F32", [4])]


def bailing_keys():
    """A 1-layer Ling-lite: 4 experts of 16 top 2 renormalized, 2 shared experts, full RoPE,
    every layer MoE, an untied (already normalized) head."""
    return plain_keys("bailingmoe", [
        ("feed_forward_length", 4, 64), ("expert_feed_forward_length", 4, 16),
        ("expert_shared_count", 4, 2), ("leading_dense_block_count", 4, 0),
        ("rope.dimension_count", 4, 16), ("expert_weights_scale", 6, 1.0),
        ("expert_weights_norm", 7, True)])


def bailing_tensors(vocab):
    b = "blk.0."
    return [("token_embd.weight", "F16", [32, vocab]), ("output_norm.weight", "F32", [32]),
            ("output.weight", "Q8_0", [32, vocab])] + moe_layer_tensors() + [
        (b + "ffn_gate_shexp.weight", "Q8_0", [32, 32]),
        (b + "ffn_up_shexp.weight", "Q8_0", [32, 32]),
        (b + "ffn_down_shexp.weight", "F16", [32, 32])]


def qwen3next_keys():
    """A 2-layer Qwen3-Next: a Gated DeltaNet layer (1 key head, 2 value heads of 16), then a
    gated attention layer (4 of 16 dims rotated); both MoE with a gated shared expert; tied."""
    keys = plain_keys("qwen3next", [
        ("expert_feed_forward_length", 4, 16), ("expert_shared_feed_forward_length", 4, 16),
        ("attention.key_length", 4, 16), ("attention.value_length", 4, 16),
        ("rope.dimension_count", 4, 4), ("ssm.conv_kernel", 4, 4), ("ssm.state_size", 4, 16),
        ("ssm.group_count", 4, 1), ("ssm.time_step_rank", 4, 2), ("ssm.inner_size", 4, 32),
        ("full_attention_interval", 4, 2)])
    return [(k, t, 2 if k == "qwen3next.block_count" else v) for k, t, v in keys]


def qwen3next_tensors(vocab):
    t = [("token_embd.weight", "F16", [32, vocab]), ("output_norm.weight", "F32", [32])]
    for i in range(2):
        b = f"blk.{i}."
        t += [(b + "attn_norm.weight", "F32", [32]), (b + "post_attention_norm.weight", "F32", [32]),
              (b + "ffn_gate_inp.weight", "F32", [32, 4]),
              (b + "ffn_gate_exps.weight", "Q8_0", [32, 16, 4]),
              (b + "ffn_up_exps.weight", "Q8_0", [32, 16, 4]),
              (b + "ffn_down_exps.weight", "F16", [16, 32, 4]),
              (b + "ffn_gate_shexp.weight", "Q8_0", [32, 16]),
              (b + "ffn_up_shexp.weight", "Q8_0", [32, 16]),
              (b + "ffn_down_shexp.weight", "F16", [16, 32]),
              (b + "ffn_gate_inp_shexp.weight", "F32", [32])]
    b = "blk.0."  # Gated DeltaNet: [q; k; v] 16 + 16 + 32 rows, z 32, [b, a] 2 + 2
    t += [(b + "attn_qkv.weight", "Q8_0", [32, 64]), (b + "attn_gate.weight", "Q8_0", [32, 32]),
          (b + "ssm_ba.weight", "F32", [32, 4]), (b + "ssm_conv1d.weight", "F32", [4, 64]),
          (b + "ssm_dt.bias", "F32", [2]), (b + "ssm_a", "F32", [2]),
          (b + "ssm_norm.weight", "F32", [16]), (b + "ssm_out.weight", "Q8_0", [32, 32])]
    b = "blk.1."  # gated attention: query and gate per head
    t += [(b + "attn_q.weight", "Q8_0", [32, 64]), (b + "attn_k.weight", "Q8_0", [32, 16]),
          (b + "attn_v.weight", "Q8_0", [32, 16]), (b + "attn_output.weight", "Q8_0", [32, 32]),
          (b + "attn_q_norm.weight", "F32", [16]), (b + "attn_k_norm.weight", "F32", [16])]
    return t


def qwen35moe_keys():
    """qwen3next's model as qwen35moe: its keys plus the M-RoPE sections; value heads tiled."""
    keys = [(k.replace("qwen3next", "qwen35moe"), t, v.replace("qwen3next", "qwen35moe")
             if isinstance(v, str) else v) for k, t, v in qwen3next_keys()]
    return keys + [("qwen35moe.rope.dimension_sections", 9, (5, [11, 11, 10, 0]))]


def qwen35moe_tensors(vocab):
    t = [row for row in qwen3next_tensors(vocab) if row[0] != "blk.0.ssm_ba.weight"]
    return t + [("blk.0.ssm_beta.weight", "F32", [32, 2]), ("blk.0.ssm_alpha.weight", "F32", [32, 2])]


def nemotron_keys():
    """A 3-block Nemotron-H MoE (Mamba-2, MoE, attention) as nemotron_h_moe: the block kinds
    in the per-layer head_count_kv / feed_forward_length arrays."""
    a = "nemotron_h_moe"
    keys = [(k, t, v) for k, t, v in plain_keys(a, [
        ("attention.key_length", 4, 16), ("attention.value_length", 4, 16),
        ("expert_feed_forward_length", 4, 16), ("expert_shared_count", 4, 1),
        ("expert_shared_feed_forward_length", 4, 16), ("expert_weights_norm", 7, True),
        ("expert_weights_scale", 6, 2.5), ("ssm.conv_kernel", 4, 4), ("ssm.state_size", 4, 8),
        ("ssm.group_count", 4, 2), ("ssm.inner_size", 4, 32), ("ssm.time_step_rank", 4, 4)])
        if k not in (f"{a}.block_count", f"{a}.attention.head_count_kv")]
    return keys + [(f"{a}.block_count", 4, 3), (f"{a}.attention.head_count_kv", 9, (4, [0, 0, 1])),
                   (f"{a}.feed_forward_length", 9, (4, [0, 16, 0]))]


def nemotron_tensors(vocab):
    t = [("token_embd.weight", "F16", [32, vocab]), ("output_norm.weight", "F32", [32]),
         ("output.weight", "Q8_0", [32, vocab])]
    t += [(f"blk.{i}.attn_norm.weight", "F32", [32]) for i in range(3)]
    b = "blk.0."  # Mamba-2: in_proj [z 32; xBC 32 + 2 x 2 x 8; dt 4]
    t += [(b + "ssm_in.weight", "Q8_0", [32, 100]), (b + "ssm_conv1d.weight", "F32", [4, 64]),
          (b + "ssm_conv1d.bias", "F32", [64]), (b + "ssm_dt.bias", "F32", [4]),
          (b + "ssm_a", "F32", [1, 4]), (b + "ssm_d", "F32", [1, 4]),
          (b + "ssm_norm.weight", "F32", [16, 2]), (b + "ssm_out.weight", "Q8_0", [32, 32])]
    b = "blk.1."
    t += [(b + "ffn_gate_inp.weight", "F32", [32, 4]), (b + "exp_probs_b.bias", "F32", [4]),
          (b + "ffn_up_exps.weight", "Q8_0", [32, 16, 4]),
          (b + "ffn_down_exps.weight", "F16", [16, 32, 4]),
          (b + "ffn_up_shexp.weight", "Q8_0", [32, 16]),
          (b + "ffn_down_shexp.weight", "F16", [16, 32])]
    b = "blk.2."
    t += [(b + "attn_q.weight", "Q8_0", [32, 32]), (b + "attn_k.weight", "Q8_0", [32, 16]),
          (b + "attn_v.weight", "Q8_0", [32, 16]), (b + "attn_output.weight", "Q8_0", [32, 32])]
    return t
