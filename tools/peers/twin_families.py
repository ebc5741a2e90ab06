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
    prefix: str = ""                # before every MLX name ("language_model." for llama4, Qwen3.5)
    layers: str = "model.layers."   # the layers' prefix after prefix
    globals: dict | None = None     # MLX name -> tensor of the non-layers (None: GLOBAL_TENSORS)


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
    # deepseek2 again for DeepSeek-V3 / Kimi-K2 (the same converter class): sigmoid gating, the
    # correction bias as exp_probs_b, groups by their top-2 sum, expert_weights_norm / _scale
    # keys; mlx-lm's split embed_q / unembed_out are the converter's attn_k_b / attn_v_b.
    "deepseek_v3": Family(gguf.MODEL_ARCH.DEEPSEEK2, "n_routed_experts", "moe_intermediate_size",
                          "mlp", permute_qk=False, norm_topk=True, has_shared=True),
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
                          prefix="language_model."),
    # nemotron_h_moe (NemotronHModel over GraniteHybridModel / Mamba2Model, src/models/
    # nemotron-h.cpp): blocks of one kind each (their kinds from the per-layer head_count_kv /
    # feed_forward_length arrays), A as -exp(A_log) and D unsqueezed to [heads, 1], the gated
    # norm as [groups, inner / groups], q/k rows permuted (undo_permute, though no RoPE).
    "nemotron_h": Family(gguf.MODEL_ARCH.NEMOTRON_H_MOE, "n_routed_experts",
                         "moe_intermediate_size", "mixer", permute_qk=True, norm_topk=True,
                         has_shared=True, layers="backbone.layers.",
                         globals={"backbone.embeddings": T.TOKEN_EMBD,
                                  "backbone.norm_f": T.OUTPUT_NORM, "lm_head": T.OUTPUT}),
    # lfm2moe (conversion/lfm2.py LFM2MoeModel, src/models/lfm2moe.cpp and lfm2.cpp): short-conv
    # and attention layers (head_count_kv 0 for a conv layer), per-head q/k norms, full NEOX
    # RoPE, leading dense layers, sigmoid + exp_probs_b, top-k renormalized (hard-coded).
    "lfm2_moe": Family(gguf.MODEL_ARCH.LFM2MOE, "num_experts", "moe_intermediate_size",
                       "feed_forward", permute_qk=False, norm_topk=True),
    # llama4 (conversion/llama.py Llama4Model, src/models/llama4.cpp): RoPE NORM on rows the
    # converter leaves as they are, MoE layers every interleave_moe_layer_step, top-1 with the
    # sigmoid weight applied to the expert input, a shared expert; the text model's names
    # under language_model. (moex's llama4 checkpoint of the multimodal wrapper).
    "llama4": Family(gguf.MODEL_ARCH.LLAMA4, "num_local_experts", "intermediate_size",
                     "feed_forward", permute_qk=False, norm_topk=False, has_shared=True,
                     prefix="language_model."),
    # minimax-m2 (conversion/minimax.py MiniMaxM2Model, src/models/minimax-m2.cpp): q/k RMS
    # norms over all heads, partial NEOX RoPE (rotary_dim), sigmoid + exp_probs_b, top-k
    # renormalized (hard-coded).
    "minimax": Family(gguf.MODEL_ARCH.MINIMAXM2, "num_local_experts", "intermediate_size",
                      "block_sparse_moe", permute_qk=False, norm_topk=True),
    "gpt_oss": Family(gguf.MODEL_ARCH.GPT_OSS, "num_local_experts", "intermediate_size", "mlp",
                      permute_qk=False, norm_topk=False),
    # hunyuan-moe (conversion/hunyuan.py HunYuanMoEModel, src/models/hunyuan-moe.cpp): q/k norms
    # after NEOX RoPE, softmax top-k renormalized (hard-coded), an ungated shared MLP of
    # intermediate_size; per-layer lists of equal values as one value; the NTK alpha folded into
    # the base.
    "hunyuan": Family(gguf.MODEL_ARCH.HUNYUAN_MOE, "num_experts", "moe_intermediate_size", "mlp",
                      permute_qk=False, norm_topk=True, has_shared=True, top_k_key="moe_topk"),
    # bailingmoe (conversion/bailingmoe.py BailingMoeModel, src/models/bailingmoe.cpp): the
    # fused query_key_value written split as attn_q / attn_k / attn_v, q and k permuted for
    # RoPE NORM as LlamaModel does; every layer MoE, softmax routing, expert_weights_norm from
    # norm_topk_prob, ungated shared experts num_shared_experts x the expert width; with
    # norm_head the converter divides output.weight's columns by their norms (+ 1e-7).
    "bailing_moe": Family(gguf.MODEL_ARCH.BAILINGMOE, "num_experts", "moe_intermediate_size",
                          "mlp", permute_qk=True, norm_topk=True, has_shared=True),
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
    "mlp.shared_mlp.gate_proj": T.FFN_GATE_SHEXP,       # hunyuan's shared MLP
    "mlp.shared_mlp.up_proj": T.FFN_UP_SHEXP,
    "mlp.shared_mlp.down_proj": T.FFN_DOWN_SHEXP,
    "mlp.gate.wg": T.FFN_GATE_INP,                      # hunyuan's router
    "self_attn.query_layernorm": T.ATTN_Q_NORM,         # hunyuan's q/k norms (after RoPE)
    "self_attn.key_layernorm": T.ATTN_K_NORM,
    "mlp.shared_experts.gate_proj": T.FFN_GATE_SHEXP,   # glm4moe's plural
    "mlp.shared_experts.up_proj": T.FFN_UP_SHEXP,
    "mlp.shared_experts.down_proj": T.FFN_DOWN_SHEXP,
    "mlp.gate.e_score_correction_bias": T.FFN_EXP_PROBS_B,  # a bare tensor -> "<name>.bias"
    "mlp.moe_statics.e_score_correction_bias": T.FFN_EXP_PROBS_B,  # ERNIE's (moex's own field
                                                        # route_with_correction_bias reads it)
    "self_attn.q_a_proj": T.ATTN_Q_A,                   # deepseek2's MLA
    "self_attn.q_a_layernorm": T.ATTN_Q_A_NORM,
    "self_attn.q_b_proj": T.ATTN_Q_B,
    "self_attn.kv_a_proj_with_mqa": T.ATTN_KV_A_MQA,
    "self_attn.kv_a_layernorm": T.ATTN_KV_A_NORM,
    "self_attn.kv_b_proj": T.ATTN_KV_B,                 # written split: attn_k_b / attn_v_b
    "self_attn.embed_q": T.ATTN_K_B,                    # deepseek_v3: kv_b_proj already split,
    "self_attn.unembed_out": T.ATTN_V_B,                # [heads, latent, nope], [heads, v, latent]
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
    "operator_norm": T.ATTN_NORM,                       # lfm2moe's names
    "ffn_norm": T.FFN_NORM,
    "self_attn.out_proj": T.ATTN_OUT,
    "self_attn.q_layernorm": T.ATTN_Q_NORM,
    "self_attn.k_layernorm": T.ATTN_K_NORM,
    "conv.in_proj": T.SHORTCONV_INPROJ,
    "conv.conv": T.SHORTCONV_CONV,                      # [H, L, 1] in MLX, {L, H} in GGUF
    "conv.out_proj": T.SHORTCONV_OUTPROJ,
    "{moe}.expert_bias": T.FFN_EXP_PROBS_B,             # a bare tensor -> "<name>.bias"
    "{moe}.e_score_correction_bias": T.FFN_EXP_PROBS_B,  # minimax's (bare)
    "feed_forward.router": T.FFN_GATE_INP,              # llama4's names
    "feed_forward.experts.gate_proj": T.FFN_GATE_EXP,
    "feed_forward.experts.up_proj": T.FFN_UP_EXP,
    "feed_forward.experts.down_proj": T.FFN_DOWN_EXP,
    "feed_forward.shared_expert.gate_proj": T.FFN_GATE_SHEXP,
    "feed_forward.shared_expert.up_proj": T.FFN_UP_SHEXP,
    "feed_forward.shared_expert.down_proj": T.FFN_DOWN_SHEXP,
    "feed_forward.gate_proj": T.FFN_GATE,               # lfm2moe's / llama4's dense layers
    "feed_forward.up_proj": T.FFN_UP,
    "feed_forward.down_proj": T.FFN_DOWN,
    "attention.query_key_value": T.ATTN_QKV,            # bailing_moe: written split
    "attention.dense": T.ATTN_OUT,
    "mlp.gate.gate_proj": T.FFN_GATE_INP,               # bailing_moe's router
    "mlp.gate_proj": T.FFN_GATE,                        # leading dense layers
    "mlp.up_proj": T.FFN_UP,
    "mlp.down_proj": T.FFN_DOWN,
}
GLOBAL_TENSORS = {
    "model.embed_tokens": T.TOKEN_EMBD,
    "model.word_embeddings": T.TOKEN_EMBD,              # bailing_moe's name
    "model.norm": T.OUTPUT_NORM,
    "model.embedding_norm": T.TOKEN_EMBD_NORM,          # lfm2moe's final norm
    "lm_head": T.OUTPUT,
}
EXPERT_TENSORS = {T.FFN_GATE_EXP, T.FFN_UP_EXP, T.FFN_DOWN_EXP}
# Tensors stored without .weight in MLX, and the suffix llama.cpp gives them.
BARE_TENSORS = {T.FFN_EXP_PROBS_B: ".bias", T.ATTN_SINKS: ".weight", T.SSM_DT: ".bias",
                T.SSM_A: "", T.SSM_D: ""}


class Unsupported(ValueError):
    """The checkpoint uses something the llama.cpp arch cannot express."""


def text_config(config):
    """A multimodal wrapper's config as one: its text_config over the top level (llama4,
    Qwen3.5) with the wrapper's model_type (which names the family; text_config's is e.g.
    qwen3_5_moe_text), and Qwen3.5's rope_parameters as the plain RoPE fields; any other
    config as it is."""
    if not isinstance(config.get("text_config"), dict):
        return config
    flat = {k: v for k, v in config.items() if k != "text_config"}
    flat.update(config["text_config"])
    flat["model_type"] = config.get("model_type")
    if isinstance(flat.get("rope_parameters"), dict):
        rp = flat["rope_parameters"]
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
    if model_type == "deepseek_v3":
        rs = config.get("rope_scaling") or {}
        if rs and rs.get("type", rs.get("rope_type")) != "yarn":
            refuse("rope_scaling", "the twin writes deepseek2's YaRN only")
        if rs and float(rs.get("mscale", 1.0)) != float(rs.get("mscale_all_dim", 0.0)):
            refuse("rope_scaling", "llama.cpp's deepseek2 takes mscale = mscale_all_dim "
                   "(src/llama-context.cpp); a checkpoint with other values has no GGUF form")
        if config.get("scoring_func", "sigmoid") != "sigmoid":
            refuse("scoring_func", "DeepSeek-V3's noaux_tc router scores by sigmoid")
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
    if model_type == "llama4":
        check_llama4(text_config(config), refuse)
        return
    if model_type == "minimax":
        if config.get("scoring_func", "sigmoid") != "sigmoid":
            refuse("scoring_func", "MiniMax-M2 scores experts with a sigmoid")
        if config.get("rope_scaling"):
            refuse("rope_scaling", "the twin writer does not map RoPE scaling")
        if not config.get("use_qk_norm", True):
            refuse("use_qk_norm", "llama.cpp's minimax-m2 loader requires the q/k norms")
        return
    if model_type == "lfm2_moe":
        check_lfm2(config, refuse)
        return
    if model_type == "ernie4_5_moe":
        check_ernie(config, refuse)
        return
    if model_type == "hunyuan":
        check_hunyuan(config, refuse)
        return
    if model_type == "bailing_moe":
        check_bailing(config, refuse)
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


def check_lfm2(config, refuse):
    """What LFM2MoeModel's keys and llama.cpp's lfm2moe graph cannot say."""
    if float(config.get("routed_scaling_factor", 1.0)) != 1.0:
        refuse("routed_scaling_factor", "the converter writes no expert_weights_scale")
    if not config.get("norm_topk_prob", True):
        refuse("norm_topk_prob", "llama.cpp's lfm2 graph hard-codes norm_w=true")
    if not config.get("use_expert_bias", True):
        refuse("use_expert_bias", "llama.cpp's lfm2moe loader requires exp_probs_b")
    if config.get("conv_bias"):
        refuse("conv_bias", "llama.cpp's lfm2moe loader has no convolution biases")
    if config.get("rope_scaling"):
        refuse("rope_scaling", "the twin writer does not map RoPE scaling")


def check_llama4(cfg, refuse):
    """The settings llama.cpp's llama4 hard-codes (src/models/llama4.cpp load_arch_hparams)."""
    fixed = {"attention_chunk_size": 8192, "floor_scale": 8192, "attn_scale": 0.1,
             "num_experts_per_tok": 1}
    for field, value in fixed.items():
        if float(cfg.get(field, value)) != value:
            raise Unsupported(f"config.json text_config.{field} = {cfg.get(field)!r}: llama.cpp's "
                              f"llama4 hard-codes {value}")
    if not cfg.get("attn_temperature_tuning", True):
        raise Unsupported("config.json text_config.attn_temperature_tuning: llama.cpp's llama4 "
                          "always tunes the NoPE layers' temperature")
    if bool(cfg.get("use_qk_norm")) != (int(cfg["num_local_experts"]) != 128):
        raise Unsupported("config.json text_config.use_qk_norm: llama.cpp's llama4 applies the "
                          "q/k norm unless there are 128 experts")
    if cfg.get("attention_bias"):
        raise Unsupported("config.json text_config.attention_bias: llama.cpp's llama4 loader "
                          "has no attention biases")
    rs = cfg.get("rope_scaling") or {}
    if rs and rs.get("rope_type", rs.get("type")) != "llama3":
        raise Unsupported("config.json text_config.rope_scaling: the twin writes llama3 only")


def llama3_rope_factors(cfg, dim):
    """rope_freqs.weight as LlamaModel.generate_extra_tensors computes it (conversion/
    llama.py): per rotated pair 1, factor, or the smooth blend between, in float32."""
    import math
    import numpy as np
    rs = cfg["rope_scaling"]
    base = float(cfg.get("rope_theta", 10000.0))
    freqs = 1.0 / (np.float32(base) ** (np.arange(0, dim, 2, dtype=np.float32) / np.float32(dim)))
    factor = float(rs.get("factor", 8.0))
    low, high = float(rs.get("low_freq_factor", 1.0)), float(rs.get("high_freq_factor", 4.0))
    old = float(rs.get("original_max_position_embeddings", 8192))
    out = []
    for freq in freqs.astype(np.float32):
        wavelen = np.float32(2 * math.pi) / freq
        if wavelen < old / high:
            out.append(1.0)
        elif wavelen > old / low:
            out.append(factor)
        else:
            smooth = (old / wavelen - low) / (high - low)
            out.append(1 / ((1 - smooth) / factor + smooth))
    return np.array(out, dtype=np.float32)


def lfm2_attention_layers(config):
    """The attention layers of an lfm2_moe config (layer_types or full_attn_idxs)."""
    if config.get("full_attn_idxs") is not None:
        return {int(i) for i in config["full_attn_idxs"]}
    return {i for i, t in enumerate(config["layer_types"]) if t == "full_attention"}


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


def uniform(config, key):
    """An int field, or a per-layer list of equal ints (Hunyuan's) as its one value."""
    v = config[key]
    if isinstance(v, list):
        if not v or any(x != v[0] for x in v):
            raise Unsupported(f"config.json {key} = {v!r}: the converter asserts one value for "
                              "every layer")
        v = v[0]
    return int(v)


def check_hunyuan(config, refuse):
    for key, want in (("use_cla", False), ("attention_bias", False), ("use_qk_norm", True),
                      ("use_mixed_mlp_moe", True), ("tie_word_embeddings", True)):
        if bool(config.get(key, want)) != want:
            refuse(key, f"llama.cpp's hunyuan-moe holds only {key} = {want}")
    if uniform(config, "num_shared_expert") != 1:
        refuse("num_shared_expert", "the converter writes the shared MLP's width as "
               "intermediate_size, one shared expert's")
    if uniform(config, "moe_intermediate_size") != int(config["intermediate_size"]):
        refuse("moe_intermediate_size", "llama.cpp's hunyuan-moe loader sizes the experts by "
               "feed_forward_length, the converter's intermediate_size (the shared MLP's width)")
    if not config.get("moex_renormalize_topk"):
        refuse("moex_renormalize_topk", "llama.cpp's hunyuan-moe renormalizes the top-k (norm_w = "
               "true); moex's hunyuan runs the checkpoint as mlx-lm, without (set the field to "
               "compare)")
    rs = config.get("rope_scaling") or {}
    if rs and rs.get("type", rs.get("rope_type")) != "dynamic":
        refuse("rope_scaling", "the converter folds a dynamic NTK alpha into the base only")


def check_bailing(config, refuse):
    """What llama.cpp's bailingmoe graph (Ling-lite's shape) holds: softmax routing without
    selection bias or groups, the scale 1 (the converter writes 1), no q/k norms, full RoPE
    over head_dim = hidden / heads, no biases, every layer MoE, the shared experts as wide as
    num_shared_experts experts."""
    for key, want in (("score_function", "softmax"), ("moe_router_enable_expert_bias", False),
                      ("n_group", 1), ("routed_scaling_factor", 1.0), ("use_qk_norm", False),
                      ("partial_rotary_factor", 1.0), ("use_qkv_bias", False),
                      ("use_bias", False), ("first_k_dense_replace", 0)):
        if config.get(key, want) != want:
            refuse(key, f"llama.cpp's bailingmoe holds only {key} = {want!r}")
    if config.get("rotary_dim") not in (None, int(config["hidden_size"]) //
                                        int(config["num_attention_heads"])):
        refuse("rotary_dim", "llama.cpp's bailingmoe rotates the whole head")
    if config.get("rope_scaling"):
        refuse("rope_scaling", "the twin writer does not map RoPE scaling")
    if config.get("moe_shared_expert_intermediate_size") not in (
            None, 0, int(config["moe_intermediate_size"])):
        refuse("moe_shared_expert_intermediate_size", "llama.cpp's shared experts are "
               "expert_shared_count x expert_feed_forward_length wide")


def gguf_name(tensor, layer=None):
    return gguf.TENSOR_NAMES[tensor].format(bid=layer)


# The MTP module's own tensors (gguf-py's NEXTN names; convert_hf_to_gguf.py's Glm4MoeModel
# writes GLM-4.5's module as one more block plus these).
NEXTN_TENSORS = {
    "enorm": T.NEXTN_ENORM, "hnorm": T.NEXTN_HNORM, "eh_proj": T.NEXTN_EH_PROJ,
    "shared_head.norm": T.NEXTN_SHARED_HEAD_NORM, "shared_head.head": T.NEXTN_SHARED_HEAD_HEAD,
    "embed_tokens": T.NEXTN_EMBED_TOKENS,
}


def tensor_table(fam, n_layers):
    """[(mlx prefix, gguf tensor, layer or None)] of every tensor the family can carry."""
    table = [(fam.prefix + name, t, None) for name, t in (fam.globals or GLOBAL_TENSORS).items()]
    for i in range(n_layers):
        for suffix, t in LAYER_TENSORS.items():
            if t == T.FFN_NORM and fam.arch in (gguf.MODEL_ARCH.GLM4_MOE, gguf.MODEL_ARCH.GPT_OSS,
                                                gguf.MODEL_ARCH.QWEN3NEXT,
                                                gguf.MODEL_ARCH.QWEN35MOE):
                t = T.ATTN_POST_NORM  # these archs' name for the norm before the FFN
            table.append((f"{fam.prefix}{fam.layers}{i}." + suffix.format(moe=fam.moe_prefix),
                          t, i))
    allowed = set(gguf.MODEL_TENSORS[fam.arch])
    if fam.arch == gguf.MODEL_ARCH.BAILINGMOE:
        allowed.add(T.ATTN_QKV)  # read from the checkpoint, written as attn_q / _k / _v
    return [row for row in table if row[1] in allowed]
