# Reference tests of the ops and the decode engine against mlx / mlx-lm (label `reference`),
# run with MOEX_PYTHON (the venv with mlx, mlx-lm, numpy). Included by src/model/CMakeLists.txt.
set(MOEX_ENGINE_REF_DIR ${CMAKE_CURRENT_SOURCE_DIR}/engine/reference)
add_executable(model_ops_reference_test ${MOEX_ENGINE_REF_DIR}/ops_reference_test.cc)
target_link_libraries(model_ops_reference_test PRIVATE moex_model GTest::gtest GTest::gtest_main)
target_compile_definitions(model_ops_reference_test PRIVATE
  MOEX_PYTHON="${MOEX_PYTHON}"
  MOEX_OPS_REFERENCE_SCRIPT="${MOEX_ENGINE_REF_DIR}/ops_reference.py")
add_test(NAME model_ops_reference_test COMMAND model_ops_reference_test)
set_tests_properties(model_ops_reference_test PROPERTIES LABELS reference TIMEOUT 600)

# Decode parity with mlx-lm per family: `moex make-model --preset tiny-<family> --dtype f32`,
# then prefill + 32 greedy steps in moex (fused on, then off) and in mlx-lm on the same ids.
# f32 checkpoints make mlx-lm compute in float32, so 1e-3 normalized RMS is meaningful.
# These run at the default precision tier (exact; the standard tier measured 1.2e-4..4.2e-4
# on the tiny families, src/kernels/README.md, so the 1e-3 gate holds for either); the checks
# below with a 1e-5 gate test formats and layouts to the exactness of f32 arithmetic, so they
# name the exact tier (--precision exact) whatever the default.
# The loops below start from every family's tiny preset (MOEX_FAMILY_TINY_PRESETS, read from
# arch/families.def by families.cmake), so a new family joins them all; each names the families
# it leaves out and why, and the variant presets it adds.
set(MOEX_PARITY_PROMPT "3,14,15,92,65,35,89,79,32,38,46,26,43")
# Each parity case below is one parity.py run. The cases are grouped by the preset their name
# starts with (the text before the first "_"); one ctest test per group, engine_parity_<preset>,
# runs the group's cases in one Python process (parity_suite.py: mlx-lm's import, ~1.5-2 s,
# is paid once per group instead of once per case), each case's model in parity_models/<case>.
# `ctest -R engine_parity_tiny-qwen3-moe$` runs a group; `parity_suite.py MOEX DIR CASES --only
# tiny-qwen3-moe_mxfp4` one case of it (the ctest log prints each case's full command).
function(moex_parity_case name)
  string(REGEX REPLACE "_.*$" "" group "${name}")
  string(JOIN "\t" line ${name} ${ARGN})
  set_property(GLOBAL APPEND PROPERTY MOEX_PARITY_GROUPS ${group})
  set_property(GLOBAL APPEND PROPERTY MOEX_PARITY_CASES_${group} "${line}")
endfunction()
function(moex_parity_suites)
  get_property(groups GLOBAL PROPERTY MOEX_PARITY_GROUPS)
  list(REMOVE_DUPLICATES groups)
  foreach(group IN LISTS groups)
    get_property(cases GLOBAL PROPERTY MOEX_PARITY_CASES_${group})
    list(JOIN cases "\n" text)
    set(cases_file ${CMAKE_CURRENT_BINARY_DIR}/parity_cases/${group}.txt)
    file(WRITE ${cases_file} "${text}\n")
    add_test(NAME engine_parity_${group}
      COMMAND ${MOEX_PYTHON} ${MOEX_ENGINE_REF_DIR}/parity_suite.py $<TARGET_FILE:moex>
              ${CMAKE_CURRENT_BINARY_DIR}/parity_models ${cases_file})
    set_tests_properties(engine_parity_${group} PROPERTIES LABELS reference TIMEOUT 900
                         SKIP_RETURN_CODE 77)
  endforeach()
endfunction()
# Not tiny-bailing-moe: mlx-lm's norm_head sanitize would zero make-model's quantized head, so
# its test below keeps the head float. Plus the variants OLMoE with expert biases,
# DeepSeek-V3 without q LoRA and DeepSeek-V2-Lite (q_proj, greedy routing).
set(parity_presets ${MOEX_FAMILY_TINY_PRESETS})
list(REMOVE_ITEM parity_presets tiny-bailing-moe)
list(APPEND parity_presets tiny-olmoe-bias tiny-deepseek-v3-q-proj tiny-deepseek-v2-lite)
foreach(preset IN LISTS parity_presets)
  moex_parity_case(${preset} --make-preset ${preset} --dtype f32 --prompt-ids ${MOEX_PARITY_PROMPT}
      --steps 32 --fused on,off --tol 1e-3)
endforeach()
# The fp quantization modes (docs/quant_formats.md): checkpoints whose every quantized module,
# routers included, is mxfp4 / mxfp8 / nvfp4, as mlx-lm loads them (config "mode").
foreach(case qwen3-moe:mxfp4 qwen3-moe:mxfp8 qwen3-moe:nvfp4 mixtral:mxfp4 olmoe-bias:mxfp4
             gpt-oss:mxfp4)
  string(REPLACE ":" ";" parts ${case})
  list(GET parts 0 family)
  list(GET parts 1 qmode)
  moex_parity_case(tiny-${family}_${qmode} --make-preset tiny-${family} --make-arg=--mode
      --make-arg=${qmode} --dtype f32 --prompt-ids ${MOEX_PARITY_PROMPT} --steps 32 --fused on,off
      --tol 1e-3)
endforeach()
# The same modes as mlx-lm's own converter writes them (`mlx_lm convert -q --q-mode M` of a
# float checkpoint): it keeps routers at 8-bit affine, so modes mix within one model.
foreach(case qwen3-moe:mxfp4 olmoe:nvfp4 qwen2-moe:mxfp8 gpt-oss:mxfp4 glm4-moe:mxfp4
             minimax:mxfp4 dots1:mxfp4)
  string(REPLACE ":" ";" parts ${case})
  list(GET parts 0 family)
  list(GET parts 1 qmode)
  moex_parity_case(tiny-${family}_mlx_convert_${qmode} --make-preset tiny-${family}
      "--mlx-convert=--q-mode ${qmode}" --dtype f32 --prompt-ids ${MOEX_PARITY_PROMPT} --steps 32
      --fused on,off --tol 1e-3)
endforeach()
# Unquantized checkpoints (docs/quant_formats.md, "Unquantized weights"): every tiny family
# written in f32 with no quantization (make-model --bits 0), and mlx-lm's own unquantized
# conversion (`mlx_lm convert --dtype D`, no -q) in bf16 and f16. Measured worst logits nRMS
# 5.5e-7..2.0e-6 (f32 products summed in f32 on both sides), so the gate is 1e-5, not 1e-3.
# Every family, plus OLMoE with expert biases.
set(parity_presets ${MOEX_FAMILY_TINY_PRESETS} tiny-olmoe-bias)
foreach(preset IN LISTS parity_presets)
  moex_parity_case(${preset}_float --make-preset ${preset} --make-arg=--bits --make-arg=0 --dtype
      f32 --prompt-ids ${MOEX_PARITY_PROMPT} --steps 32 --fused on,off --tol 1e-5 --precision exact)
endforeach()
foreach(case qwen3-moe:bfloat16 olmoe-bias:float16 qwen2-moe:bfloat16)
  string(REPLACE ":" ";" parts ${case})
  list(GET parts 0 family)
  list(GET parts 1 fdtype)
  moex_parity_case(tiny-${family}_mlx_convert_${fdtype} --make-preset tiny-${family}
      --mlx-convert-float ${fdtype} --f32-compute --dtype f32 --prompt-ids ${MOEX_PARITY_PROMPT}
      --steps 32 --fused on,off --tol 1e-5 --precision exact)
endforeach()
# Group 128 as mlx-lm's converter writes it (routers at 8-bit g64 beside 4-bit g128). Not
# mixtral: mlx_lm convert loads a Mistral tokenizer through mistral-common, whose
# dependencies the reference venv does not install. Not bailing-moe: its g128 conversion needs
# norm_head false (engine_parity_tiny-bailing-moe_mlx_convert_g128 below). Not gpt-oss and
# minimax: their mlx_lm conversions are checked at mxfp4 above, and no g128 case was added.
set(parity_presets ${MOEX_FAMILY_TINY_PRESETS})
list(REMOVE_ITEM parity_presets tiny-mixtral tiny-bailing-moe tiny-gpt-oss tiny-minimax)
foreach(preset IN LISTS parity_presets)
  string(REGEX REPLACE "^tiny-" "" family ${preset})
  moex_parity_case(tiny-${family}_mlx_convert_g128 --make-preset tiny-${family}
      "--mlx-convert=--q-group-size 128" --dtype f32 --prompt-ids ${MOEX_PARITY_PROMPT} --steps 32
      --fused on,off --tol 1e-5 --precision exact)
endforeach()
# A Hugging Face-layout directory (what mlx_lm.load also accepts): bf16, every expert its
# own tensors (experts.E.gate_proj / Mixtral's and LFM2's w1 ...; Llama-4's fused
# gate_up_proj [E, H, 2*Dff] and down_proj [E, Dff, H]; Granite's input_linear and Gemma-4's
# experts.gate_up_proj [E, 2*Dff, H], gate rows first; LFM2's conv weights [H, 1, L]), two
# shards with an index; moex stacks (and for Llama-4 transposes) the experts at load. (An
# OLMoE with mlp_bias in this layout is refused by mlx-lm 0.32.2 itself, whose sanitize
# stacks no bias tensors, and by moex with a message.) Not gpt-oss: its Hugging Face layout is
# openai's original one (engine_parity_tiny-gpt-oss_original_layout below). Not qwen3-5-moe:
# its Hub layout fuses the experts (experts.gate_up_proj), the only form mlx-lm's sanitize maps,
# and parity.py writes per-expert tensors; hf_config_parity_qwen3_5_moe writes the Hub layout.
# Plus the Gemma-4 wrapper.
set(parity_presets ${MOEX_FAMILY_TINY_PRESETS} tiny-gemma4-wrapped)
list(REMOVE_ITEM parity_presets tiny-gpt-oss tiny-qwen3-5-moe)
foreach(preset IN LISTS parity_presets)
  string(REGEX REPLACE "^tiny-" "" family ${preset})
  moex_parity_case(tiny-${family}_hf_layout --make-preset tiny-${family} --make-arg=--bits
      --make-arg=0 --dtype bf16 --f32-compute --hf-layout --prompt-ids ${MOEX_PARITY_PROMPT}
      --steps 32 --fused on,off --tol 1e-5 --precision exact)
endforeach()
# Qwen3-Next and Qwen3.5-MoE as mlx-lm's converter writes them at its defaults (4-bit g64;
# the router and the shared expert's gate at 8-bit by the family's quant predicate).
foreach(family qwen3-next qwen3-5-moe)
  moex_parity_case(tiny-${family}_mlx_convert_4bit --make-preset tiny-${family}
      "--mlx-convert=--q-bits 4" --dtype f32 --prompt-ids ${MOEX_PARITY_PROMPT} --steps 32 --fused
      on,off --tol 1e-5 --precision exact)
endforeach()
# Nemotron-H as mlx-lm's converter writes it at its defaults (4-bit g64; the MoE gate is a bare
# weight, never quantized) and at mxfp4.
foreach(qargs "--q-bits 4" "--q-mode mxfp4")
  string(REGEX REPLACE "[^a-z0-9]+" "-" qname "${qargs}")
  moex_parity_case(tiny-nemotron-h_mlx_convert${qname} --make-preset tiny-nemotron-h
      "--mlx-convert=${qargs}" --dtype f32 --prompt-ids ${MOEX_PARITY_PROMPT} --steps 32 --fused
      on,off --tol 1e-5 --precision exact)
endforeach()
# MiniMax-M2 as the Hub's config.json names it (model_type minimax_m2, which mlx-lm remaps to
# its minimax module and `mlx_lm convert` keeps); 8 steps, fused on: a config-reading check.
moex_parity_case(tiny-minimax_model_type_minimax_m2 --make-preset tiny-minimax --dtype f32
    "--set=model_type=\"minimax_m2\"" --prompt-ids ${MOEX_PARITY_PROMPT} --steps 8 --fused on --tol
    1e-3)
# Nemotron-H's time_step_limit as Python writes transformers' default (0.0, inf): Python's
# json module writes a bare Infinity, transformers 5 / mlx-lm 0.32 {"__float__": "Infinity"};
# both spellings in one config (8 steps, fused on: a config-reading check, kept short).
moex_parity_case(tiny-nemotron-h_time_step_limit_nonfinite --make-preset tiny-nemotron-h --dtype
    f32 "--set=time_step_limit=[{\"__float__\": \"-Infinity\"}, Infinity]" --prompt-ids
    ${MOEX_PARITY_PROMPT} --steps 8 --fused on --tol 1e-3)
# DeepSeek-V3 as users get it: a Hugging Face-layout directory (per-expert tensors, one
# kv_b_proj per layer) converted by mlx-lm, whose sanitize stacks the experts and splits
# kv_b_proj into embed_q / unembed_out; at its default 4-bit g64 (embed_q's input of 64
# quantized too), and unquantized bf16.
moex_parity_case(tiny-deepseek-v3_mlx_convert_4bit_from_hf --make-preset tiny-deepseek-v3
    --hf-layout "--mlx-convert=--q-bits 4" --dtype f32 --prompt-ids ${MOEX_PARITY_PROMPT} --steps
    32 --fused on,off --tol 1e-5 --precision exact)
moex_parity_case(tiny-deepseek-v3_mlx_convert_bfloat16_from_hf --make-preset tiny-deepseek-v3
    --hf-layout --mlx-convert-float bfloat16 --f32-compute --dtype f32 --prompt-ids
    ${MOEX_PARITY_PROMPT} --steps 32 --fused on,off --tol 1e-5 --precision exact)
# DeepSeek-V2 as users get it: a Hugging Face-layout directory (per-expert tensors) converted
# by mlx-lm at 4 bits; mlx-lm's deepseek_v2 keeps kv_b_proj one Linear, so it is quantized and
# moex dequantizes it at bind time before splitting it. The q_proj variant (V2-Lite's shape,
# plain greedy top-k) in the make-model f32 loop above.
moex_parity_case(tiny-deepseek-v2_mlx_convert_4bit_from_hf --make-preset tiny-deepseek-v2
    --hf-layout "--mlx-convert=--q-bits 4" --dtype f32 --prompt-ids ${MOEX_PARITY_PROMPT} --steps
    32 --fused on,off --tol 1e-3)
# Float and quantized modules mixed in one model, and within one MoE layer: some projections
# replaced by their mx.dequantize'd float weights (what mlx-lm leaves unquantized when a
# width is no multiple of the group size); Qwen2-MoE with a float shared expert and gate
# beside mxfp4 routed experts.
moex_parity_case(tiny-qwen3-moe_mixed_float --make-preset tiny-qwen3-moe --dtype f32
    "--dequantize=layers\\.1\\.mlp\\.switch_mlp\\.(gate|down)_proj|layers\\.2\\.self_attn\\.q_proj|layers\\.0\\.mlp"
    --prompt-ids ${MOEX_PARITY_PROMPT} --steps 32 --fused on,off --tol 1e-5 --precision exact)
moex_parity_case(tiny-qwen2-moe_mxfp4_float_shared --make-preset tiny-qwen2-moe
    "--mlx-convert=--q-mode mxfp4" --dequantize=shared_expert --dtype f32 --prompt-ids
    ${MOEX_PARITY_PROMPT} --steps 32 --fused on,off --tol 1e-5 --precision exact)
# Gemma-4 in the multimodal wrapper's config (model_type gemma4: text_config, the top-level
# vocab_size, tensors under language_model.*), as make-model writes it and as mlx_lm convert
# rewrites it at g128 (router at 8-bit g64).
moex_parity_case(tiny-gemma4-wrapped --make-preset tiny-gemma4-wrapped --dtype f32 --prompt-ids
    ${MOEX_PARITY_PROMPT} --steps 32 --fused on,off --tol 1e-3)
moex_parity_case(tiny-gemma4-wrapped_mlx_convert_g128 --make-preset tiny-gemma4-wrapped
    "--mlx-convert=--q-group-size 128" --dtype f32 --prompt-ids ${MOEX_PARITY_PROMPT} --steps 32
    --fused on,off --tol 1e-5 --precision exact)
# gpt-oss in openai's original layout (what the Hugging Face repository holds): mxfp4 experts as
# gate_up_proj_blocks / _scales / _bias with gate and up rows alternating and down_proj_*, the
# other modules in float, config quantization_config {"quant_method": "mxfp4"}. moex binds down
# as a view and copies gate / up apart (docs/families.md, gpt_oss).
moex_parity_case(tiny-gpt-oss_original_layout --make-preset tiny-gpt-oss --make-arg=--mode
    --make-arg=mxfp4 "--dequantize=self_attn|router|embed_tokens|lm_head" --gpt-oss-original
    --dtype f32 --prompt-ids ${MOEX_PARITY_PROMPT} --steps 32 --fused on,off --tol 1e-5 --precision
    exact)
# A "mixed" checkpoint as mlx-community ships dots.llm1: 4-bit experts with 6-bit down
# projections under a quantization section that names only the 4-bit global setting, so both
# sides read the 6-bit planes from their packed shapes (docs/quant_formats.md, "Checkpoints").
moex_parity_case(tiny-dots1_unlisted_6bit_down --make-preset tiny-dots1 --make-arg=--down-bits
    --make-arg=6 "--set=quantization={\"group_size\": 64, \"bits\": 4}" --dtype f32 --prompt-ids
    ${MOEX_PARITY_PROMPT} --steps 32 --fused on,off --tol 1e-5 --precision exact)
# ERNIE-4.5 with moe_gate_act "sigmoid" (its other routing rule).
moex_parity_case(tiny-ernie4-5-moe_sigmoid_gate --make-preset tiny-ernie4-5-moe
    "--set=moe_gate_act=\"sigmoid\"" --dtype f32 --prompt-ids ${MOEX_PARITY_PROMPT} --steps 32
    --fused on,off --tol 1e-3)
# Ling (bailing_moe). make-model quantizes lm_head, and mlx-lm 0.32.2's sanitize would then
# "normalize" its packed words for norm_head (zeroing them), so the head is stored float, as a
# Hugging Face checkpoint has it, and both sides normalize its columns at load. Then Ling-lite's
# softmax scoring; then mlx_lm convert at g128, whose head the converter normalized before
# quantizing: norm_head is set false there so that mlx-lm reads that head as it is (moex reads a
# quantized head as it is either way; docs/families.md).
moex_parity_case(tiny-bailing-moe --make-preset tiny-bailing-moe "--dequantize=^lm_head$" --dtype
    f32 --prompt-ids ${MOEX_PARITY_PROMPT} --steps 32 --fused on,off --tol 1e-3)
moex_parity_case(tiny-bailing-moe_softmax_scores --make-preset tiny-bailing-moe
    "--dequantize=^lm_head$" "--set=score_function=\"softmax\"" --dtype f32 --prompt-ids
    ${MOEX_PARITY_PROMPT} --steps 32 --fused on,off --tol 1e-3)
moex_parity_case(tiny-bailing-moe_mlx_convert_g128 --make-preset tiny-bailing-moe
    "--mlx-convert=--q-group-size 128" --set=norm_head=false --dtype f32 --prompt-ids
    ${MOEX_PARITY_PROMPT} --steps 32 --fused on,off --tol 1e-5 --precision exact)
# A bf16 checkpoint (make-model's default dtype), with mlx-lm's compute dtype set to float32.
moex_parity_case(tiny-qwen3-moe_bf16 --make-preset tiny-qwen3-moe --dtype bf16 --f32-compute
    --prompt-ids ${MOEX_PARITY_PROMPT} --steps 32 --fused on,off)

# Bad input through the command line: exit code 2 and a message naming the problem.
add_test(NAME engine_cli_errors_test
  COMMAND bash ${MOEX_ENGINE_REF_DIR}/cli_errors_test.sh $<TARGET_FILE:moex>)
set_tests_properties(engine_cli_errors_test PROPERTIES LABELS unit TIMEOUT 300)
# The same decode on the scalar kernels (every CPU runs them).
moex_parity_case(tiny-qwen3-moe_scalar --make-preset tiny-qwen3-moe --dtype f32 --isa scalar
    --prompt-ids ${MOEX_PARITY_PROMPT} --steps 32 --fused on,off)
# Llama-4 with an 8-token attention chunk and floor_scale 4, so that chunked attention and the
# NoPE layers' attention temperature both act within the 45 positions of the test.
moex_parity_case(tiny-llama4_chunked --make-preset tiny-llama4 --dtype f32 --set
    text_config.attention_chunk_size=8 --set text_config.floor_scale=4 --prompt-ids
    ${MOEX_PARITY_PROMPT} --steps 32 --fused on,off)
moex_parity_suites()
# Checkpoints built from each family's real Hugging Face config.json (engine/reference/hf_configs/,
# sources in its README): the config shrunk, every other field and spelling kept, random weights
# under the Hub's tensor names; the raw directory and `mlx_lm convert -q` of it against mlx-lm.
# Parts that cannot run (fp8 originals, mlx-lm / transformers limits) print SKIP with the reason.
file(GLOB MOEX_HF_CONFIGS ${MOEX_ENGINE_REF_DIR}/hf_configs/*.json)
foreach(cfg ${MOEX_HF_CONFIGS})
  get_filename_component(name ${cfg} NAME_WE)
  add_test(NAME hf_config_parity_${name}
    COMMAND ${MOEX_PYTHON} ${MOEX_ENGINE_REF_DIR}/hf_config_parity_test.py $<TARGET_FILE:moex>
            ${CMAKE_CURRENT_BINARY_DIR}/hf_config_models --only ${name})
  set_tests_properties(hf_config_parity_${name} PROPERTIES LABELS reference TIMEOUT 300
                       SKIP_RETURN_CODE 77)
endforeach()
# Every family at every precision tier on prompts of 8, 512 and 2,048 tokens (engine/reference/
# tier_matrix.py; its gates and the measured errors are in src/kernels/README.md, "Precision
# tiers"): exact within 1e-5 of mlx-lm in float32, standard within 4e-3 with the same greedy
# tokens, fast within 0.5 at the prompt's end. On a host without AVX-512 VNNI every tier runs the
# float32 kernels, so there every tier is held to the exact gate. Ling's head is stored float
# (mlx-lm 0.32.2 re-normalizes a quantized one; engine_parity_tiny-bailing-moe above).
# The 2,048-token prompts are label `long` (mlx-lm's float32 prefill of them takes ~8 s per
# family on these CPUs): scripts/test.sh leaves that label out, and .ci/run runs it as a
# section of its own (docs/benchmark_results/build-ci-2026-12-06.md).
foreach(preset IN LISTS MOEX_FAMILY_TINY_PRESETS)
  set(tier_extra)
  if(preset STREQUAL "tiny-bailing-moe")
    set(tier_extra "--dequantize=^lm_head$")
  endif()
  add_test(NAME engine_tiers_${preset}
    COMMAND ${MOEX_PYTHON} ${MOEX_ENGINE_REF_DIR}/tier_matrix.py $<TARGET_FILE:moex>
            ${CMAKE_CURRENT_BINARY_DIR}/tier_models --presets ${preset} --lengths 8,512
            ${tier_extra})
  add_test(NAME engine_tiers_long_${preset}
    COMMAND ${MOEX_PYTHON} ${MOEX_ENGINE_REF_DIR}/tier_matrix.py $<TARGET_FILE:moex>
            ${CMAKE_CURRENT_BINARY_DIR}/tier_models_long --presets ${preset} --lengths 2048
            ${tier_extra})
  set_tests_properties(engine_tiers_${preset} PROPERTIES LABELS reference TIMEOUT 600
                       SKIP_RETURN_CODE 77)
  set_tests_properties(engine_tiers_long_${preset} PROPERTIES LABELS "reference;long"
                       TIMEOUT 600 SKIP_RETURN_CODE 77)
endforeach()
