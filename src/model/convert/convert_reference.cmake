# `moex convert` against `mlx_lm convert` (label `reference`, MOEX_PYTHON's mlx-lm): per
# Hugging Face config fixture (engine/reference/hf_configs), the tiny checkpoint converted by
# both with seven recipes (float, --dtype float16, -q, 8-bit g32, mxfp4, nvfp4, mixed_3_6);
# every tensor, config.json and the index must be equal, and moex must run its own output.
file(GLOB MOEX_CONVERT_HF_CONFIGS ${CMAKE_SOURCE_DIR}/src/model/engine/reference/hf_configs/*.json)
set(MOEX_CONVERT_FIXTURES bailing_moe_norm_head)  # the test's VARIANTS
foreach(cfg ${MOEX_CONVERT_HF_CONFIGS})
  get_filename_component(name ${cfg} NAME_WE)
  list(APPEND MOEX_CONVERT_FIXTURES ${name})
endforeach()
foreach(name ${MOEX_CONVERT_FIXTURES})
  add_test(NAME convert_reference_${name}
    COMMAND ${MOEX_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/convert_reference_test.py
            $<TARGET_FILE:moex> ${CMAKE_CURRENT_BINARY_DIR}/convert_models/${name} --only ${name})
  set_tests_properties(convert_reference_${name} PROPERTIES LABELS reference TIMEOUT 300
                       SKIP_RETURN_CODE 77)
endforeach()
