"""The moex families a GGUF twin can represent in llama.cpp, with the GGUF arch, the tensor-name
table (MLX name -> gguf MODEL_TENSOR) and the config checks for what the llama.cpp arch cannot
express. Architecture facts were read from llama.cpp 0c1e570 (src/models/<arch>.cpp,
src/llama-model.cpp llama_model_rope_type) and gguf-py 0.19.0 (constants.py).
"""
from dataclasses import dataclass

import gguf

T = gguf.MODEL_TENSOR


@dataclass
class Family:
    arch: gguf.MODEL_ARCH
    n_experts_key: str
    expert_dff_key: str
    moe_prefix: str                 # "mlp" or "block_sparse_moe"
    permute_qk: bool                # RoPE type NORM (interleaved) in llama.cpp: q/k rows permuted
    norm_topk: bool                 # what llama.cpp's build_moe_ffn does for this arch (norm_w)
    has_shared: bool = False
    top_k_key: str = "num_experts_per_tok"
    root: str = ""                  # the MLX names' prefix ("language_model." for Qwen3.5)
    layers: str = "model.layers."   # the layers' prefix after root
    globals: dict | None = None     # MLX name -> tensor of the non-layer tensors (None: GLOBAL_TENSORS)


FAMILIES = {
    # qwen3moe: build_moe_ffn(..., norm_w=true, SOFTMAX); every layer MoE; q/k norm per head.
    "qwen3_moe": Family(gguf.MODEL_ARCH.QWEN3MOE, "num_experts", "moe_intermediate_size", "mlp",
                        permute_qk=False, norm_topk=True),
    # mixtral is llama.cpp's llama arch with n_expert > 0 (norm_w=true, SOFTMAX), RoPE NORM.
    "mixtral": Family(gguf.MODEL_ARCH.LLAMA, "num_local_experts", "intermediate_size",
                      "block_sparse_moe", permute_qk=True, norm_topk=True),
    # olmoe: norm_w=false, full-width q/k RMS norm (n_embd).
    "olmoe": Family(gguf.MODEL_ARCH.OLMOE, "num_experts", "intermediate_size", "mlp",
                    permute_qk=False, norm_topk=False),
    # qwen2moe: norm_w=false, shared expert gated by sigmoid(ffn_gate_inp_shexp . x).
    "qwen2_moe": Family(gguf.MODEL_ARCH.QWEN2MOE, "num_experts", "moe_intermediate_size", "mlp",
                        permute_qk=False, norm_topk=False, has_shared=True),
    # glm4moe (conversion/glm.py Glm4MoeModel, src/models/glm4-moe.cpp): leading dense layers,
    # sigmoid router plus exp_probs_b, ungated shared experts, partial NEOX RoPE, q/k/v biases;
    # expert_weights_norm / _scale are keys, so norm_topk_prob is whatever the config says.
    "glm4_moe": Family(gguf.MODEL_ARCH.GLM4_MOE, "n_routed_experts", "moe_intermediate_size",
                       "mlp", permute_qk=False, norm_topk=True, has_shared=True),
    # deepseek2 (conversion/deepseek.py DeepseekV2Model, src/models/deepseek2.cpp): MLA with
    # kv_b_proj split into attn_k_b (transposed) / attn_v_b, RoPE NORM on rows the converter
    # leaves as they are (DeepSeek's checkpoints are already in interleaved order), leading
    # dense layers, softmax routing, ungated shared experts, YaRN.
    "deepseek_v2": Family(gguf.MODEL_ARCH.DEEPSEEK2, "n_routed_experts", "moe_intermediate_size",
                          "mlp", permute_qk=False, norm_topk=False, has_shared=True),
    # gpt-oss (conversion/gpt_oss.py, src/models/openai-moe.cpp): sinks, biases everywhere,
    # softmax over the top-k logits, SwiGLU-OAI, even layers sliding, YaRN.
    # dots1 (conversion/dots1.py, src/models/dots1.cpp): qwen3moe's attention, glm4moe's
    # routing (sigmoid + exp_probs_b, groups, expert_weights_norm / _scale keys), leading dense
    # layers, ungated shared experts n_shared_experts * moe_intermediate_size wide.
    "dots1": Family(gguf.MODEL_ARCH.DOTS1, "n_routed_experts", "moe_intermediate_size", "mlp",
                    permute_qk=False, norm_topk=True, has_shared=True),
    # ernie4_5-moe (conversion/ernie.py Ernie4_5MoeModel, src/models/ernie4-5*.cpp): RoPE NORM
    # on rows the converter leaves as they are (ERNIE's own RoPE is interleaved), leading dense
    # layers, softmax top-k renormalized (hard-coded), ungated shared experts.
    "ernie4_5_moe": Family(gguf.MODEL_ARCH.ERNIE4_5_MOE, "moe_num_experts",
                           "moe_intermediate_size", "mlp", permute_qk=False, norm_topk=True,
                           has_shared=True, top_k_key="moe_k"),
    # granitemoe (conversion/granite.py GraniteMoeModel over LlamaModel, src/models/granite*.cpp):
    # Mixtral's layout (q/k rows and biases permuted for RoPE NORM), the muP multipliers as
    # keys, softmax top-k renormalized.
    "granitemoe": Family(gguf.MODEL_ARCH.GRANITE_MOE, "num_local_experts", "intermediate_size",
                         "block_sparse_moe", permute_qk=True, norm_topk=True),
    # qwen3next (conversion/qwen.py Qwen3NextModel, src/models/qwen3next.cpp): Gated DeltaNet
    # layers (in_proj_qkvz split into attn_qkv / attn_gate, A as -exp(A_log), the conv
    # squeezed) and gated attention every full_attention_interval-th layer, every layer MoE
    # (softmax top-k renormalized, hard-coded), sigmoid-gated shared expert, partial NEOX RoPE.
    "qwen3_next": Family(gguf.MODEL_ARCH.QWEN3NEXT, "num_experts", "moe_intermediate_size",
                         "mlp", permute_qk=False, norm_topk=True, has_shared=True),
    # qwen35moe (Qwen3_5MoeTextModel over _LinearAttentionVReorderBase and Qwen3NextModel,
    # src/models/qwen35moe.cpp): Qwen3-Next's transforms on separate in_proj_qkv / _z / _b / _a,
    # value heads stored tiled when there are more than key heads, interleaved M-RoPE sections.
    "qwen3_5_moe": Family(gguf.MODEL_ARCH.QWEN35MOE, "num_experts", "moe_intermediate_size",
                          "mlp", permute_qk=False, norm_topk=True, has_shared=True,
                          root="language_model."),
    # nemotron_h_moe (NemotronHModel over GraniteHybridModel / Mamba2Model, src/models/
    # nemotron-h.cpp): blocks of one kind each (their kinds from the per-layer head_count_kv /
    # feed_forward_length arrays), A as -exp(A_log) and D unsqueezed to [heads, 1], the gated
    # norm as [groups, inner / groups], q/k rows permuted (undo_permute, though no RoPE).
    "nemotron_h": Family(gguf.MODEL_ARCH.NEMOTRON_H_MOE, "n_routed_experts",
                         "moe_intermediate_size", "mixer", permute_qk=True, norm_topk=True,
                         has_shared=True, layers="backbone.layers.",
                         globals={"backbone.embeddings": T.TOKEN_EMBD,
                                  "backbone.norm_f": T.OUTPUT_NORM, "lm_head": T.OUTPUT}),
    "gpt_oss": Family(gguf.MODEL_ARCH.GPT_OSS, "num_local_experts", "intermediate_size", "mlp",
                      permute_qk=False, norm_topk=False),
}

# Per layer: MLX name after "model.layers.{i}." -> gguf tensor. "{moe}" is the family's prefix.
LAYER_TENSORS = {
    "input_layernorm": T.ATTN_NORM,
    "post_attention_layernorm": T.FFN_NORM,
    "self_attn.q_proj": T.ATTN_Q,
    "self_attn.k_proj": T.ATTN_K,
    "self_attn.v_proj": T.ATTN_V,
    "self_attn.o_proj": T.ATTN_OUT,
    "self_attn.q_norm": T.ATTN_Q_NORM,
    "self_attn.k_norm": T.ATTN_K_NORM,
    "{moe}.gate": T.FFN_GATE_INP,
    "{moe}.switch_mlp.gate_proj": T.FFN_GATE_EXP,
    "{moe}.switch_mlp.up_proj": T.FFN_UP_EXP,
    "{moe}.switch_mlp.down_proj": T.FFN_DOWN_EXP,
    "mlp.shared_expert.gate_proj": T.FFN_GATE_SHEXP,
    "mlp.shared_expert.up_proj": T.FFN_UP_SHEXP,
    "mlp.shared_expert.down_proj": T.FFN_DOWN_SHEXP,
    "mlp.shared_expert_gate": T.FFN_GATE_INP_SHEXP,
    "mlp.shared_experts.gate_proj": T.FFN_GATE_SHEXP,   # glm4moe's plural
    "mlp.shared_experts.up_proj": T.FFN_UP_SHEXP,
    "mlp.shared_experts.down_proj": T.FFN_DOWN_SHEXP,
    "mlp.gate.e_score_correction_bias": T.FFN_EXP_PROBS_B,  # a bare tensor -> "<name>.bias"
    "self_attn.q_a_proj": T.ATTN_Q_A,                   # deepseek2's MLA
    "self_attn.q_a_layernorm": T.ATTN_Q_A_NORM,
    "self_attn.q_b_proj": T.ATTN_Q_B,
    "self_attn.kv_a_proj_with_mqa": T.ATTN_KV_A_MQA,
    "self_attn.kv_a_layernorm": T.ATTN_KV_A_NORM,
    "self_attn.kv_b_proj": T.ATTN_KV_B,                 # written split: attn_k_b / attn_v_b
    "self_attn.sinks": T.ATTN_SINKS,                    # gpt-oss: a bare tensor -> ".weight"
    "block_sparse_moe.router.layer": T.FFN_GATE_INP,    # granitemoe's router
    "mlp.router": T.FFN_GATE_INP,                       # gpt-oss's router (with a bias)
    "mlp.experts.gate_proj": T.FFN_GATE_EXP,            # gpt-oss's experts (with biases)
    "mlp.experts.up_proj": T.FFN_UP_EXP,
    "mlp.experts.down_proj": T.FFN_DOWN_EXP,
    "linear_attn.in_proj_qkvz": T.ATTN_QKV,             # qwen3next: written split (+ ATTN_GATE)
    "linear_attn.in_proj_ba": T.SSM_BETA_ALPHA,
    "linear_attn.in_proj_qkv": T.ATTN_QKV,              # qwen35moe: separate projections
    "linear_attn.in_proj_z": T.ATTN_GATE,
    "linear_attn.in_proj_b": T.SSM_BETA,
    "linear_attn.in_proj_a": T.SSM_ALPHA,
    "linear_attn.conv1d": T.SSM_CONV1D,                 # [C, L, 1] -> [C, L]
    "linear_attn.dt_bias": T.SSM_DT,                    # a bare tensor -> "ssm_dt.bias"
    "linear_attn.A_log": T.SSM_A,                       # a bare tensor, written as -exp(A_log)
    "linear_attn.norm": T.SSM_NORM,
    "linear_attn.out_proj": T.SSM_OUT,
    "norm": T.ATTN_NORM,                                # nemotron_h: each block's one norm
    "mixer.in_proj": T.SSM_IN,                          # nemotron_h's Mamba-2
    "mixer.conv1d": T.SSM_CONV1D,
    "mixer.dt_bias": T.SSM_DT,
    "mixer.A_log": T.SSM_A,
    "mixer.D": T.SSM_D,                                 # a bare tensor, as [heads, 1]
    "mixer.norm": T.SSM_NORM,                           # as [groups, inner / groups]
    "mixer.out_proj": T.SSM_OUT,
    "mixer.q_proj": T.ATTN_Q,
    "mixer.k_proj": T.ATTN_K,
    "mixer.v_proj": T.ATTN_V,
    "mixer.o_proj": T.ATTN_OUT,
    "{moe}.switch_mlp.fc1": T.FFN_UP_EXP,               # nemotron_h's relu2 experts (no gate)
    "{moe}.switch_mlp.fc2": T.FFN_DOWN_EXP,
    "mixer.gate.e_score_correction_bias": T.FFN_EXP_PROBS_B,
    "mixer.shared_experts.up_proj": T.FFN_UP_SHEXP,
    "mixer.shared_experts.down_proj": T.FFN_DOWN_SHEXP,
    "mlp.gate_proj": T.FFN_GATE,                        # leading dense layers
    "mlp.up_proj": T.FFN_UP,
    "mlp.down_proj": T.FFN_DOWN,
}
GLOBAL_TENSORS = {
    "model.embed_tokens": T.TOKEN_EMBD,
    "model.norm": T.OUTPUT_NORM,
    "lm_head": T.OUTPUT,
}
EXPERT_TENSORS = {T.FFN_GATE_EXP, T.FFN_UP_EXP, T.FFN_DOWN_EXP}
# Tensors stored without .weight in MLX, and the suffix llama.cpp gives them.
BARE_TENSORS = {T.FFN_EXP_PROBS_B: ".bias", T.ATTN_SINKS: ".weight", T.SSM_DT: ".bias",
                T.SSM_A: "", T.SSM_D: ""}


class Unsupported(ValueError):
    """The checkpoint uses something the llama.cpp arch cannot express."""


def text_config(config):
    """A multimodal config's text_config with the top level's fields over it (model_type,
    tie_word_embeddings, quantization, ...) and Qwen3.5's rope_parameters as the plain RoPE
    fields; any other config as it is."""
    if not isinstance(config.get("text_config"), dict):
        return config
    flat = dict(config["text_config"])
    flat.update({k: v for k, v in config.items() if k != "text_config"})
    rp = flat.get("rope_parameters") or {}
    flat.setdefault("rope_theta", rp.get("rope_theta", 10000.0))
    flat.setdefault("partial_rotary_factor", rp.get("partial_rotary_factor", 0.25))
    return flat


def family_of(config):
    model_type = config.get("model_type")
    if model_type not in FAMILIES:
        raise Unsupported(f"config.json model_type {model_type!r}: no GGUF twin (supported: "
                          f"{', '.join(sorted(FAMILIES))})")
    return model_type, FAMILIES[model_type]


def check_expressible(model_type, fam, config):
    """Raises Unsupported naming the config field llama.cpp's arch has no equivalent for."""
    def refuse(field_name, why):
        raise Unsupported(f"config.json {field_name} = {config.get(field_name)!r}: {why} "
                          f"(llama.cpp arch {fam.arch.name.lower()})")

    if model_type == "deepseek_v2":
        rs = config.get("rope_scaling") or {}
        if rs.get("type", rs.get("rope_type")) != "yarn":
            refuse("rope_scaling", "the twin writes deepseek2's YaRN only")
        if float(rs.get("mscale", 1.0)) != float(rs.get("mscale_all_dim", 0.0)):
            refuse("rope_scaling", "llama.cpp's deepseek2 takes mscale = mscale_all_dim "
                   "(src/llama-context.cpp); a checkpoint with other values has no GGUF form")
        if config.get("scoring_func", "softmax") != "softmax" or config.get("norm_topk_prob"):
            refuse("scoring_func", "deepseek2 as written here: softmax, no renormalization")
        return
    if model_type == "gpt_oss":
        types = config.get("layer_types")
        default = ["sliding_attention" if i % 2 == 0 else "full_attention"
                   for i in range(int(config["num_hidden_layers"]))]
        if types is not None and list(types) != default:
            refuse("layer_types", "the twin writes llama.cpp's default pattern (even layers "
                   "sliding) only")
        rs = config.get("rope_scaling") or {}
        if rs and (rs.get("rope_type", rs.get("type")) != "yarn" or "mscale" in rs
                   or "mscale_all_dim" in rs):
            refuse("rope_scaling", "gpt-oss's YaRN without mscale keys only")
        return
    if model_type == "dots1":
        if config.get("rope_scaling"):
            refuse("rope_scaling", "the twin writer does not map RoPE scaling")
        if config.get("scoring_func", "sigmoid") != "sigmoid":
            refuse("scoring_func", "dots.llm1 scores experts with a sigmoid")
        return
    if model_type == "ernie4_5_moe":
        check_ernie(config, refuse)
        return
    if model_type == "nemotron_h":
        pattern = config.get("hybrid_override_pattern")
        if not isinstance(pattern, str):
            refuse("hybrid_override_pattern", "the twin writes a pattern string")
        if "E" in pattern and "-" in pattern:
            refuse("hybrid_override_pattern", "a MoE file has no dense MLP block: llama.cpp's "
                   "loader makes a block with a feed_forward_length MoE")
        if int(config.get("n_group", 1)) != 1:
            refuse("n_group", "the converter writes no expert_group_used_count and llama.cpp "
                   "asserts one when there are expert groups")
        lim = config.get("time_step_limit")
        if lim is not None and (float(lim[0]) != 0.0 or float(lim[1]) != float("inf")):
            refuse("time_step_limit", "no key carries it and llama.cpp does not clip dt")
        if config.get("mlp_bias") or config.get("moe_latent_size") is not None:
            refuse("mlp_bias", "the twin writes no MLP biases or latent projections")
        return
    if model_type == "qwen3_5_moe":
        rp = config.get("rope_parameters") or {}
        if rp.get("rope_type", "default") != "default":
            refuse("rope_parameters", "the twin writes plain (M-)RoPE only")
        if int(config["linear_value_head_dim"]) != int(config["linear_key_head_dim"]):
            refuse("linear_value_head_dim", "llama.cpp's qwen35moe loader takes the value head "
                   "dim equal to linear_key_head_dim")
    if model_type == "qwen3_next":
        # llama.cpp's loader sizes the value heads by ssm.state_size (the key head dim).
        if int(config["linear_value_head_dim"]) != int(config["linear_key_head_dim"]):
            refuse("linear_value_head_dim", "llama.cpp's qwen3next loader takes the value head "
                   "dim equal to linear_key_head_dim")
        if config.get("layer_types") is not None:
            refuse("layer_types", "the twin writes the full_attention_interval rule only")
        # then the generic checks: every layer MoE, norm_w, no RoPE scaling, SiLU
    if model_type == "glm4_moe":
        if config.get("rope_scaling"):
            refuse("rope_scaling", "the twin writer does not map RoPE scaling")
        if config.get("scoring_func", "sigmoid") != "sigmoid":
            refuse("scoring_func", "llama.cpp's glm4moe gating is written as sigmoid")
        return
    if config.get("mlp_only_layers"):
        refuse("mlp_only_layers", "llama.cpp makes every layer MoE; dense layers have no place")
    if int(config.get("decoder_sparse_step", 1)) != 1:
        refuse("decoder_sparse_step", "llama.cpp makes every layer MoE")
    if "norm_topk_prob" in config and bool(config["norm_topk_prob"]) != fam.norm_topk:
        refuse("norm_topk_prob", f"llama.cpp hard-codes norm_w={str(fam.norm_topk).lower()}")
    if config.get("rope_scaling"):
        refuse("rope_scaling", "the twin writer does not map RoPE scaling")
    if config.get("mlp_bias"):
        refuse("mlp_bias", "llama.cpp's expert FFN has no biases")
    if config.get("clip_qkv") is not None:
        refuse("clip_qkv", "the twin writer does not map q/k/v clamping")
    if config.get("hidden_act", "silu") != "silu":
        refuse("hidden_act", "llama.cpp's MoE FFN here is SiLU-gated")


def check_ernie(config, refuse):
    layers = int(config["num_hidden_layers"])
    end = config.get("moe_layer_end_index", layers - 1)
    if (max(end) if isinstance(end, list) else end) != layers - 1:
        refuse("moe_layer_end_index", "llama.cpp's graph makes every layer after the leading "
               "dense ones MoE (by the interval)")
    if config.get("moe_gate_act", "softmax") != "softmax":
        refuse("moe_gate_act", "llama.cpp's ernie4_5-moe graph hard-codes softmax")
    if config.get("use_bias"):
        refuse("use_bias", "the twin writer maps no MLP biases")
    if config.get("rope_scaling"):
        refuse("rope_scaling", "the twin writer does not map RoPE scaling")
    shared = int(config.get("moe_num_shared_experts") or 0)
    width = int(config["intermediate_size"]) // int(config["num_key_value_heads"])
    if shared and shared * int(config["moe_intermediate_size"]) != width:
        refuse("moe_num_shared_experts", "the converter writes the shared experts' width as "
               f"intermediate_size // num_key_value_heads = {width}, not shared x "
               "moe_intermediate_size")


def gguf_name(tensor, layer=None):
    return gguf.TENSOR_NAMES[tensor].format(bid=layer)


def tensor_table(fam, n_layers):
    """[(mlx prefix, gguf tensor, layer or None)] of every tensor the family can carry."""
    table = [(fam.root + name, t, None) for name, t in (fam.globals or GLOBAL_TENSORS).items()]
    for i in range(n_layers):
        for suffix, t in LAYER_TENSORS.items():
            if t == T.FFN_NORM and fam.arch in (gguf.MODEL_ARCH.GLM4_MOE, gguf.MODEL_ARCH.GPT_OSS,
                                                gguf.MODEL_ARCH.QWEN3NEXT,
                                                gguf.MODEL_ARCH.QWEN35MOE):
                t = T.ATTN_POST_NORM  # these archs' name for the norm before the FFN
            table.append((f"{fam.root}{fam.layers}{i}." + suffix.format(moe=fam.moe_prefix), t, i))
    allowed = set(gguf.MODEL_TENSORS[fam.arch])
    return [row for row in table if row[1] in allowed]
