"""The arch-specific metadata of a GGUF twin (gguf_twin.py add_metadata writes the keys every
arch shares): the keys each llama.cpp converter class's set_gguf_parameters writes, from the
moex checkpoint's config.json. Sources: llama.cpp 0c1e570 conversion/<arch>.py.
"""
import gguf


def add_glm4moe_metadata(writer, plan, cfg):
    """The keys conversion/glm.py's Glm4MoeModel.set_gguf_parameters writes, plus the generic
    expert group keys llama.cpp's loader reads (for a config with n_group > 1)."""
    writer.add_rope_dimension_count(int(plan.head_dim * float(cfg.get("partial_rotary_factor",
                                                                      0.5))))
    if cfg.get("n_shared_experts") is not None:
        writer.add_expert_shared_count(int(cfg["n_shared_experts"]))
    if cfg.get("first_k_dense_replace") is not None:
        writer.add_leading_dense_block_count(int(cfg["first_k_dense_replace"]))
    writer.add_expert_gating_func(gguf.ExpertGatingFuncType.SIGMOID)
    if cfg.get("routed_scaling_factor") is not None:
        writer.add_expert_weights_scale(float(cfg["routed_scaling_factor"]))
    if cfg.get("norm_topk_prob") is not None:
        writer.add_expert_weights_norm(bool(cfg["norm_topk_prob"]))
    if int(cfg.get("n_group", 1)) > 1:
        writer.add_expert_group_count(int(cfg["n_group"]))
        writer.add_expert_group_used_count(int(cfg["topk_group"]))


def add_yarn_metadata(writer, cfg):
    """The base converter's rope.scaling.* keys of a yarn rope_scaling (TextModel
    .set_gguf_parameters in conversion/base.py)."""
    rs = cfg.get("rope_scaling") or {}
    if rs.get("type", rs.get("rope_type")) != "yarn":
        return
    writer.add_rope_scaling_type(gguf.RopeScalingType.YARN)
    writer.add_rope_scaling_factor(float(rs["factor"]))
    writer.add_rope_scaling_orig_ctx_len(int(rs["original_max_position_embeddings"]))
    if rs.get("beta_fast") is not None:
        writer.add_rope_scaling_yarn_beta_fast(float(rs["beta_fast"]))
    if rs.get("beta_slow") is not None:
        writer.add_rope_scaling_yarn_beta_slow(float(rs["beta_slow"]))


def add_deepseek2_metadata(writer, plan, cfg):
    """DeepseekV2Model.set_gguf_parameters (conversion/deepseek.py, which also converts
    DeepseekV3ForCausalLM): MLA as MQA over the latent (head_count_kv 1, key / value lengths of
    the latent, the per-head ones as *_mla), the routing keys, YaRN with 0.1 * mscale_all_dim
    as the log multiplier."""
    nope, rope, v = (int(cfg["qk_nope_head_dim"]), int(cfg["qk_rope_head_dim"]),
                     int(cfg["v_head_dim"]))
    latent = int(cfg["kv_lora_rank"])
    writer.add_head_count_kv(1)
    if cfg.get("q_lora_rank") is not None:
        writer.add_q_lora_rank(int(cfg["q_lora_rank"]))
    elif plan.n_layers not in (26, 27):
        # llama.cpp reads q_lora_rank unless the layer count is a known Lite model's; the
        # converter omits it for a null rank, so a small q_proj model needs the 0 written.
        writer.add_q_lora_rank(0)
    writer.add_kv_lora_rank(latent)
    writer.add_key_length(latent + rope)
    writer.add_value_length(latent)
    writer.add_key_length_mla(nope + rope)
    writer.add_value_length_mla(v)
    writer.add_rope_dimension_count(rope)
    writer.add_leading_dense_block_count(int(cfg.get("first_k_dense_replace") or 0))
    writer.add_expert_shared_count(int(cfg.get("n_shared_experts") or 0))
    if cfg.get("routed_scaling_factor") is not None:
        writer.add_expert_weights_scale(float(cfg["routed_scaling_factor"]))
    if cfg.get("n_group") is not None:
        writer.add_expert_group_count(int(cfg["n_group"]))
    if cfg.get("topk_group") is not None:
        writer.add_expert_group_used_count(int(cfg["topk_group"]))
    # The base converter's scoring_func key: DeepSeek-V3's configs say "sigmoid" (V2's predate
    # the field: softmax); norm_topk_prob only when true (DeepseekV2Model).
    sigmoid = cfg.get("scoring_func", "softmax") == "sigmoid"
    writer.add_expert_gating_func(gguf.ExpertGatingFuncType.SIGMOID if sigmoid
                                  else gguf.ExpertGatingFuncType.SOFTMAX)
    if cfg.get("norm_topk_prob"):
        writer.add_expert_weights_norm(True)
    add_yarn_metadata(writer, cfg)
    rs = cfg.get("rope_scaling") or {}
    if rs.get("mscale_all_dim") is not None:
        writer.add_rope_scaling_yarn_log_mul(0.1 * float(rs["mscale_all_dim"]))


def add_arch_metadata(writer, plan, cfg):
    """The keys of the archs added after deepseek2 / gpt-oss (the others are written inline by
    add_metadata)."""
    arch = plan.fam.arch
    if arch == gguf.MODEL_ARCH.DOTS1:
        add_dots1_metadata(writer, cfg)
    elif arch == gguf.MODEL_ARCH.QWEN3NEXT:
        add_qwen3next_metadata(writer, plan, cfg)
    elif arch == gguf.MODEL_ARCH.NEMOTRON_H_MOE:
        add_nemotron_h_metadata(writer, plan, cfg)
    elif arch == gguf.MODEL_ARCH.QWEN35MOE:
        # Qwen3_5MoeTextModel: Qwen3-Next's keys and the M-RoPE sections (_Qwen35MRopeMixin:
        # the config's mrope_section, 4 entries, else [11, 11, 10, 0]).
        add_qwen3next_metadata(writer, plan, cfg)
        sections = list((cfg.get("rope_parameters") or {}).get("mrope_section", [11, 11, 10]))
        writer.add_rope_dimension_sections((sections + [0, 0, 0, 0])[:4])
    elif arch == gguf.MODEL_ARCH.ERNIE4_5_MOE:
        add_ernie_metadata(writer, cfg)
    elif arch == gguf.MODEL_ARCH.LFM2MOE:
        # LFM2MoeModel.set_gguf_parameters (conversion/lfm2.py); head_count_kv is written
        # per layer by add_metadata.
        writer.add_leading_dense_block_count(int(cfg.get("num_dense_layers", 0)))
        writer.add_expert_gating_func(gguf.ExpertGatingFuncType.SIGMOID)
        writer.add_shortconv_l_cache(int(cfg["conv_L_cache"]))
    elif arch == gguf.MODEL_ARCH.LLAMA4:
        # Llama4Model.set_gguf_parameters (conversion/llama.py); no sliding_window key unless
        # every layer is full attention (MobileLLM), which the twin does not write.
        writer.add_interleave_moe_layer_step(int(cfg["interleave_moe_layer_step"]))
    elif arch == gguf.MODEL_ARCH.MINIMAXM2:
        # The base converter's gating function from scoring_func (llama.cpp's minimax-m2 sets
        # no default: without the key its graph aborts).
        writer.add_expert_gating_func(gguf.ExpertGatingFuncType.SIGMOID)
    elif arch == gguf.MODEL_ARCH.GRANITE_MOE:
        # GraniteModel.set_gguf_parameters (conversion/granite.py): the muP multipliers.
        writer.add_attention_scale(float(cfg["attention_multiplier"]))
        writer.add_embedding_scale(float(cfg["embedding_multiplier"]))
        writer.add_residual_scale(float(cfg["residual_multiplier"]))
        writer.add_logit_scale(float(cfg["logits_scaling"]))
    elif arch == gguf.MODEL_ARCH.BAILINGMOE:
        # BailingMoeModel.set_gguf_parameters (conversion/bailingmoe.py): the scale written as
        # 1 whatever the config says (check_bailing refuses another), the shared experts'
        # count, the renormalization flag.
        writer.add_leading_dense_block_count(int(cfg.get("first_k_dense_replace") or 0))
        writer.add_expert_weights_scale(1.0)
        writer.add_expert_shared_count(int(cfg["num_shared_experts"]))
        writer.add_expert_weights_norm(bool(cfg["norm_topk_prob"]))
    elif arch == gguf.MODEL_ARCH.HUNYUAN_MOE:
        # HunYuanMoEModel.set_gguf_parameters (conversion/hunyuan.py): the shared MLP's width
        # and count; the NTK alpha is folded into the base (rope_base), scaling type none.
        writer.add_expert_shared_feed_forward_length(int(cfg["intermediate_size"]))
        writer.add_expert_shared_count(1)
        writer.add_rope_scaling_type(gguf.RopeScalingType.NONE)
        writer.add_rope_scaling_factor(1)


def rope_base(plan, cfg):
    """rope.freq_base: rope_theta, for Hunyuan times alpha^(d / (d - 2)) with d = hidden /
    heads when its rope_scaling is "dynamic" (the converter's fold of the NTK alpha)."""
    base = float(cfg.get("rope_theta", 10000.0))
    rs = cfg.get("rope_scaling") or {}
    if plan.fam.arch == gguf.MODEL_ARCH.HUNYUAN_MOE and rs.get("type") == "dynamic":
        d = plan.hidden // plan.n_head
        base *= float(rs.get("alpha", 1000)) ** (d / (d - 2))
    return base


def add_dots1_metadata(writer, cfg):
    """Dots1Model.set_gguf_parameters (conversion/dots1.py) over the base converter's
    n_group / topk_group / scoring_func keys (conversion/base.py)."""
    writer.add_leading_dense_block_count(int(cfg["first_k_dense_replace"]))
    writer.add_expert_shared_count(int(cfg["n_shared_experts"]))
    writer.add_expert_weights_scale(float(cfg["routed_scaling_factor"]))
    writer.add_expert_weights_norm(bool(cfg["norm_topk_prob"]))
    if cfg.get("n_group") is not None:
        writer.add_expert_group_count(int(cfg["n_group"]))
    if cfg.get("topk_group") is not None:
        writer.add_expert_group_used_count(int(cfg["topk_group"]))
    writer.add_expert_gating_func(gguf.ExpertGatingFuncType.SIGMOID)


def add_ernie_metadata(writer, cfg):
    """Ernie4_5MoeModel.set_gguf_parameters (conversion/ernie.py): the interval, the leading
    dense layers (moe_layer_start_index), the shared count, and the shared width as the
    converter computes it, intermediate_size // num_key_value_heads (twin_families.check_ernie
    refuses a checkpoint where that is not the width)."""
    start = cfg.get("moe_layer_start_index", 0)
    writer.add_interleave_moe_layer_step(int(cfg.get("moe_layer_interval", 1)))
    writer.add_leading_dense_block_count(int(min(start) if isinstance(start, list) else start))
    shared = int(cfg.get("moe_num_shared_experts") or 0)
    writer.add_expert_shared_count(shared)
    if shared > 0:
        writer.add_expert_shared_feed_forward_length(
            int(cfg["intermediate_size"]) // int(cfg["num_key_value_heads"]))


def add_qwen3next_metadata(writer, plan, cfg):
    """Qwen3NextModel.set_gguf_parameters (conversion/qwen.py) over Qwen2MoeModel's shared
    expert width: the Gated DeltaNet heads as ssm.* keys, full_attention_interval, the rotated
    dims of the partial RoPE."""
    writer.add_expert_shared_feed_forward_length(int(cfg["shared_expert_intermediate_size"]))
    writer.add_ssm_conv_kernel(int(cfg["linear_conv_kernel_dim"]))
    writer.add_ssm_state_size(int(cfg["linear_key_head_dim"]))
    writer.add_ssm_group_count(int(cfg["linear_num_key_heads"]))
    writer.add_ssm_time_step_rank(int(cfg["linear_num_value_heads"]))
    writer.add_ssm_inner_size(int(cfg["linear_value_head_dim"]) * int(cfg["linear_num_value_heads"]))
    writer.add_full_attention_interval(int(cfg.get("full_attention_interval", 4)))
    partial = float(cfg.get("partial_rotary_factor", 0.25))
    writer.add_rope_dimension_count(int(plan.head_dim * partial))


def add_nemotron_h_metadata(writer, plan, cfg):
    """NemotronHModel.set_gguf_parameters (conversion/nemotron.py) over GraniteHybridModel's and
    Mamba2Model's: the block kinds as per-layer head_count_kv (attention blocks) and
    feed_forward_length (MoE blocks) arrays, the Mamba-2 sizes as ssm.* keys, the MoE keys,
    context length 2^20 (no RoPE). Written after add_metadata's scalars, which they replace."""
    pattern = cfg["hybrid_override_pattern"]
    writer.add_context_length(2 ** 20)
    writer.add_head_count_kv([plan.n_kv if c == "*" else 0 for c in pattern])
    writer.add_feed_forward_length([int(cfg["moe_intermediate_size"]) if c == "E" else 0
                                    for c in pattern])
    writer.add_layer_norm_eps(float(cfg["layer_norm_epsilon"]))  # (the RMS one: add_metadata)
    writer.add_ssm_conv_kernel(int(cfg["conv_kernel"]))
    writer.add_ssm_state_size(int(cfg["ssm_state_size"]))
    writer.add_ssm_group_count(int(cfg["n_groups"]))
    writer.add_ssm_inner_size(int(cfg["mamba_num_heads"]) * int(cfg["mamba_head_dim"]))
    writer.add_ssm_time_step_rank(int(cfg["mamba_num_heads"]))
    writer.add_expert_shared_feed_forward_length(int(cfg["moe_shared_expert_intermediate_size"]))
    writer.add_expert_shared_count(int(cfg["n_shared_experts"]))
    writer.add_expert_weights_norm(bool(cfg["norm_topk_prob"]))
    writer.add_expert_weights_scale(float(cfg["routed_scaling_factor"]))
    writer.add_expert_group_count(int(cfg.get("n_group", 1)))
